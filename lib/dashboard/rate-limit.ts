// Failed-attempt counters in memory (per process). A name (an email at one address, an address)
// has `free` failures; after that each further attempt must wait, twice as long after each failure
// (from baseMs up to maxMs). Slowing down rather than locking out: whoever knows an email cannot
// lock its owner out, and guessing slows exponentially. A name is forgotten forgetMs after its
// last failure.
// With N gateway nodes on one database each node counts on its own and takes 1/N of the
// allowance: free failures divided by N (at least one), every wait multiplied by N, so all nodes
// together admit about the attempts one node would (no database round trip per attempt).
import { LRUCache } from 'lru-cache';

export interface BackoffPolicy {
  free: number;
  baseMs: number;
  maxMs: number;
  forgetMs: number;
}

interface Failures {
  count: number;
  last: number;
  /** No attempt before this time. */
  until: number;
}

/**
 * The names kept are bounded by their total size (the least recently used are dropped first): a
 * name counts its length plus ENTRY_CHARS for its entry, so at most 50,000 names and 8 million
 * characters (names come from form fields and headers). One size bound, not lru-cache's `max`
 * beside it: `max` allocates its arrays for every name up front (lib/lru.ts).
 */
const MAX_SIZE = 8_000_000;
const ENTRY_CHARS = 160;

export class AttemptLimiter {
  private readonly failures = new LRUCache<string, Failures>({
    maxSize: MAX_SIZE,
    sizeCalculation: (_v, name) => name.length + ENTRY_CHARS,
  });

  constructor(
    private readonly policy: BackoffPolicy,
    private readonly clock: () => number = Date.now,
    /** Live gateway nodes sharing the allowance. */
    private readonly nodes: () => number = () => 1,
  ) {}

  /** Milliseconds until `name` may try again; 0 when it may now. */
  retryAfter(name: string): number {
    const f = this.current(name);
    return f ? Math.max(0, f.until - this.clock()) : 0;
  }

  /** Count a failure (callers count an attempt before checking it, so attempts in parallel count too). */
  fail(name: string): void {
    const now = this.clock();
    const count = (this.current(name)?.count ?? 0) + 1;
    const n = Math.max(1, this.nodes());
    const over = count - this.free(n);
    const until = over < 0 ? 0 : now + n * Math.min(this.policy.maxMs, this.policy.baseMs * 2 ** over);
    this.failures.set(name, { count, last: now, until });
  }

  /** Take back one counted failure (an attempt that succeeded); a wait already due stays. */
  forgive(name: string): void {
    const f = this.current(name);
    if (!f) return;
    if (f.count <= 1) this.failures.delete(name);
    else this.failures.set(name, { ...f, count: f.count - 1, until: f.count - 1 < this.free(Math.max(1, this.nodes())) ? 0 : f.until });
  }

  /** This node's free failures when `n` nodes share them. */
  private free(n: number): number {
    return Math.max(1, Math.floor(this.policy.free / n));
  }

  reset(name: string): void {
    this.failures.delete(name);
  }

  /** Names held (tests). */
  get size(): number {
    return this.failures.size;
  }

  private current(name: string): Failures | undefined {
    const f = this.failures.get(name);
    if (f && this.clock() - f.last > this.policy.forgetMs) {
      this.failures.delete(name);
      return undefined;
    }
    return f;
  }
}
