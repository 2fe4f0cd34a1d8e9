// Circuit breaker per offer: after `failure_threshold` consecutive failures an offer is skipped
// for `cooldown_ms`; then one trial request is let through (half-open). A success closes it.
import type { BreakerConfig } from './config-types.js';

interface State {
  failures: number;
  openUntil: number;
  trialInFlight: boolean;
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

  /** Milliseconds until the listing may be tried again (0 if it may now). */
  reopensIn(listing: string): number {
    const s = this.states.get(listing);
    if (!s || s.failures < this.cfg.failure_threshold) return 0;
    return Math.max(0, s.openUntil - this.now());
  }

  success(listing: string): void {
    this.states.delete(listing);
  }

  failure(listing: string): void {
    let s = this.states.get(listing);
    if (!s) this.states.set(listing, (s = { failures: 0, openUntil: 0, trialInFlight: false }));
    s.failures++;
    s.trialInFlight = false;
    if (s.failures >= this.cfg.failure_threshold) s.openUntil = this.now() + this.cfg.cooldown_ms;
  }

  /** A trial that ended without a verdict (e.g. the client left) frees the slot. */
  abandon(listing: string): void {
    const s = this.states.get(listing);
    if (s) s.trialInFlight = false;
  }
}
