// Failed-attempt counters in memory (per process). A name (an email at one address, an address)
// has `free` failures; after that each further attempt must wait, twice as long after each failure
// (from baseMs up to maxMs). Slowing down rather than locking out: whoever knows an email cannot
// lock its owner out, and guessing slows exponentially. A name is forgotten forgetMs after its
// last failure.
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

/** Names kept at most (the least recently used are dropped first), and their total length. */
const MAX_NAMES = 50_000;
const MAX_NAME_CHARS = 8_000_000;

export class AttemptLimiter {
  private readonly failures = new LRUCache<string, Failures>({
    max: MAX_NAMES,
    // Bounded in characters too: names come from form fields and headers.
    maxSize: MAX_NAME_CHARS,
    sizeCalculation: (_v, name) => name.length + 1,
  });

  constructor(private readonly policy: BackoffPolicy, private readonly clock: () => number = Date.now) {}

  /** Milliseconds until `name` may try again; 0 when it may now. */
  retryAfter(name: string): number {
    const f = this.current(name);
    return f ? Math.max(0, f.until - this.clock()) : 0;
  }

  /** Count a failure (callers count an attempt before checking it, so attempts in parallel count too). */
  fail(name: string): void {
    const now = this.clock();
    const count = (this.current(name)?.count ?? 0) + 1;
    const over = count - this.policy.free;
    const until = over < 0 ? 0 : now + Math.min(this.policy.maxMs, this.policy.baseMs * 2 ** over);
    this.failures.set(name, { count, last: now, until });
  }

  /** Take back one counted failure (an attempt that succeeded); a wait already due stays. */
  forgive(name: string): void {
    const f = this.current(name);
    if (!f) return;
    if (f.count <= 1) this.failures.delete(name);
    else this.failures.set(name, { ...f, count: f.count - 1, until: f.count - 1 < this.policy.free ? 0 : f.until });
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
