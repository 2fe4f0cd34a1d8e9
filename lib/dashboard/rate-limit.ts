// Failed-attempt counters in memory (per process): after `max` failures within `windowMs` of the
// first one, a name (an IP address, an email) is refused until that window ends.
import { LRUCache } from 'lru-cache';

export class AttemptLimiter {
  private readonly failures: LRUCache<string, number>;

  constructor(private readonly max: number, windowMs: number) {
    // Bounded, so a flood of distinct names cannot grow memory; the oldest names are dropped first.
    this.failures = new LRUCache<string, number>({ max: 50_000, ttl: windowMs, ttlAutopurge: false });
  }

  /** Milliseconds until `name` may try again; 0 when it may now. */
  retryAfter(name: string): number {
    const n = this.failures.get(name) ?? 0;
    return n >= this.max ? Math.max(1, this.failures.getRemainingTTL(name)) : 0;
  }

  fail(name: string): void {
    const n = this.failures.get(name);
    // The window runs from the first failure: later ones do not extend it.
    if (n === undefined) this.failures.set(name, 1);
    else this.failures.set(name, n + 1, { noUpdateTTL: true });
  }

  reset(name: string): void {
    this.failures.delete(name);
  }
}
