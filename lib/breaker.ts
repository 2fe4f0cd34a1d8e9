// Circuit breaker per offer: after `failure_threshold` consecutive failures an offer is skipped
// for `cooldown_ms`; then one trial request is let through (half-open). A success closes it.
// A failure that came with the upstream's own Retry-After uses that instead: the upstream said when
// it will answer again, and the 503 the client gets repeats it.
import type { BreakerConfig } from './config-types.js';

/** An upstream's Retry-After longer than this is taken as this (a broken or hostile hint must not park an offer for days). */
export const MAX_RETRY_HINT_MS = 60 * 60 * 1000;

interface State {
  failures: number;
  openUntil: number;
  trialInFlight: boolean;
  /** The upstream's last Retry-After, as a time: it refuses until then (0: no hint). */
  refusesUntil: number;
}

export class Breakers {
  private readonly states = new Map<string, State>();
  constructor(
    private cfg: BreakerConfig,
    private readonly now: () => number = Date.now,
  ) {}

  reconfigure(cfg: BreakerConfig): void {
    this.cfg = cfg;
  }

  /** May this offer be tried now? Claims the single trial slot of a cooled-down offer. */
  tryAcquire(listing: string): boolean {
    const s = this.states.get(listing);
    if (!s || s.failures < this.cfg.failure_threshold) return true;
    if (this.now() < s.openUntil || s.trialInFlight) return false;
    s.trialInFlight = true;
    return true;
  }

  /** Is the listing cooling down or running its trial request? (Reads without claiming the trial slot.) */
  isOpen(listing: string): boolean {
    const s = this.states.get(listing);
    return !!s && s.failures >= this.cfg.failure_threshold && (this.now() < s.openUntil || s.trialInFlight);
  }

  /** For metrics: 0 closed, 1 open (cooling down), 2 half-open (its trial may run or runs). */
  state(listing: string): 0 | 1 | 2 {
    const s = this.states.get(listing);
    if (!s || s.failures < this.cfg.failure_threshold) return 0;
    return this.now() < s.openUntil && !s.trialInFlight ? 1 : 2;
  }

  /**
   * Milliseconds until the listing may answer again (0 if it may now): the end of its cooldown, or
   * of the upstream's own Retry-After, whichever is later.
   */
  reopensIn(listing: string): number {
    const s = this.states.get(listing);
    if (!s) return 0;
    const until = Math.max(s.refusesUntil, s.failures >= this.cfg.failure_threshold ? s.openUntil : 0);
    return Math.max(0, until - this.now());
  }

  success(listing: string): void {
    this.states.delete(listing);
  }

  /** A failed attempt; `retryAfterMs` is the upstream's own Retry-After, when it sent one. */
  failure(listing: string, retryAfterMs?: number): void {
    let s = this.states.get(listing);
    if (!s) this.states.set(listing, (s = { failures: 0, openUntil: 0, trialInFlight: false, refusesUntil: 0 }));
    const now = this.now();
    const hint = retryAfterMs === undefined ? undefined : Math.min(Math.max(0, retryAfterMs), MAX_RETRY_HINT_MS);
    s.failures++;
    s.trialInFlight = false;
    // The upstream's latest word replaces an earlier one.
    if (hint !== undefined) s.refusesUntil = now + hint;
    if (s.failures >= this.cfg.failure_threshold) s.openUntil = now + (hint ?? this.cfg.cooldown_ms);
  }

  /** A trial that ended without a verdict (e.g. the client left) frees the slot. */
  abandon(listing: string): void {
    const s = this.states.get(listing);
    if (s) s.trialInFlight = false;
  }
}
