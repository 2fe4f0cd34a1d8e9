// Per-key rate limits with GCRA (the generic cell rate algorithm, a token bucket kept as one number).
// A limit of L per minute spaces units T = 60 s / L apart; the state is the theoretical arrival
// time (TAT): when the key's use so far would be paid off. A cost of n is admitted when, with it
// added (TAT = max(TAT, now) + n·T), the debt TAT − now stays within one minute: a full minute's
// allowance may come in one burst, and it refills continuously, not at a window's edge. One number
// per limit and a few float operations per request (no timestamps per request, as a sliding
// log needs, and no boundary burst of twice the limit, as a fixed window allows). The remaining
// allowance and the time to a full one (OpenAI's "reset") follow from the same number.
// With N gateway nodes each enforces a 1/N share of the key's limit (nodeShare): no round trip
// per request, and a key spread evenly over the nodes gets its limit in total.
import type { LRUCache } from 'lru-cache';
import { lruOfAtMost } from '../../lib/lru.js';

export const WINDOW_MS = 60_000;
/** Float slack: L units at T = 60 s / L each must add up to no more than a minute. */
const EPSILON_MS = 1e-6;

/** One key's state: the theoretical arrival times (ms on the limiter's clock) of its two limits. */
export interface KeyWindows {
  requests: number;
  tokens: number;
}

export type LimitName = keyof KeyWindows;

/**
 * Admit `cost` units at `now` under `perMinute`: 0 when admitted (and counted), else ms to wait.
 * A cost above a minute's allowance never fits, unless `shared`: a node's share of a key's limit
 * can be smaller than one request the key may make, so such a cost is admitted when the key owes
 * nothing on this node, and its debt is paid off before the next.
 */
export function admit(w: KeyWindows, name: LimitName, perMinute: number, cost: number, now: number, shared = false): number {
  const after = Math.max(w[name], now) + (cost * WINDOW_MS) / perMinute;
  const over = after - now - WINDOW_MS;
  if (over > EPSILON_MS) {
    if (!shared) return over;
    if (w[name] > now) return Math.min(over, w[name] - now);
  }
  w[name] = after;
  return 0;
}

/** Units left to use now (0 ≤ remaining ≤ perMinute). */
export function remaining(w: KeyWindows, name: LimitName, perMinute: number, now: number): number {
  const debt = Math.max(0, w[name] - now);
  return Math.max(0, Math.floor(((WINDOW_MS - debt) * perMinute) / WINDOW_MS + 1e-9));
}

/** Milliseconds until the whole allowance is back. */
export const resetMs = (w: KeyWindows, name: LimitName, now: number): number => Math.max(0, w[name] - now);

/**
 * A finished request used `delta` units more (or, negative, fewer) than it was admitted with. Only
 * the part of its admission still outstanding is given back: once its debt expired, what it did not
 * use is gone, and later requests must not receive it. `admittedUntil` is TAT right after admitting it.
 */
export function correct(w: KeyWindows, name: LimitName, perMinute: number, delta: number, admittedUntil: number, now: number): void {
  const ms = (delta * WINDOW_MS) / perMinute;
  if (ms > 0) w[name] = Math.max(w[name], now) + ms;
  else w[name] -= Math.min(-ms, Math.max(0, admittedUntil - now));
}

/** This node's part of a per-minute limit shared by `liveNodes` nodes (burst included). */
export const nodeShare = (perMinute: number, liveNodes: number): number => perMinute / Math.max(1, liveNodes);

/**
 * The windows of recently active keys. Bounded: past `max` keys the least recently used is
 * forgotten, which only matters if it was still paying off a debt (max distinct keys within a minute).
 */
export class KeyLimiter {
  private readonly keys: LRUCache<number, KeyWindows>;

  constructor(max = 100_000) {
    this.keys = lruOfAtMost(max);
  }

  /** The key's windows; created empty on first sight. */
  windows(keyId: number): KeyWindows {
    let w = this.keys.get(keyId);
    if (!w) this.keys.set(keyId, (w = { requests: -Infinity, tokens: -Infinity }));
    return w;
  }

  /** The key's windows if known (for corrections: a forgotten key has nothing to correct). */
  peek(keyId: number): KeyWindows | undefined {
    return this.keys.peek(keyId);
  }
}

/** OpenAI's reset format, Go's duration notation: "0s", "12ms", "1.5s", "6m0s", "1h0m0s" (ms precision, rounded up). */
export function goDuration(ms: number): string {
  // Float sums of intervals land a hair above whole milliseconds: that hair is not a millisecond more.
  const whole = Math.ceil(ms - 1e-6);
  if (!(whole > 0)) return '0s';
  if (whole < 1000) return `${whole}ms`;
  const h = Math.floor(whole / 3_600_000);
  const m = Math.floor(whole / 60_000) % 60;
  const s = `${(whole % 60_000) / 1000}s`;
  return h > 0 ? `${h}h${m}m${s}` : m > 0 ? `${m}m${s}` : s;
}
