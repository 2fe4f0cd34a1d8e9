// Seeing other nodes' changes: the change counter (migration 001) moves whenever keys, routing or
// accounts change, on any node or from the command line; a node polls it in Store.sync(), one
// single-row read. `pollMs` spaces the polls: sync() answers from the last poll while it is younger
// than that, so a serving node under load reads the counter a few times a second instead of once
// per request, and a change made elsewhere is seen within `pollMs` (plus a round trip). Callers
// arriving while a poll is in flight share it. This node's own changes count at once (bump).
import type { Db } from './db.js';

/**
 * The serving gateway's spacing of polls: a change made on another node or from the command line
 * is honoured within about 100 ms, and a node reads the counter at most 10 times a second however
 * many requests it serves (instead of a round trip per request).
 */
export const SERVING_CHANGE_POLL_MS = 100;

export class ChangeCounter {
  /** Moves on every change that may affect cached keys, routing or accounts. */
  version = 0;
  private counter: number | undefined;
  private polledAt = -Infinity;
  private polling: Promise<number> | undefined;

  constructor(private readonly db: Db, private readonly pollMs: number) {}

  check(): Promise<number> {
    if (performance.now() - this.polledAt < this.pollMs) return Promise.resolve(this.version);
    this.polling ??= this.poll().finally(() => (this.polling = undefined));
    return this.polling;
  }

  private async poll(): Promise<number> {
    const started = performance.now();
    const r = await this.db.one<{ n: number }>({ name: 'gateway_changes', text: 'SELECT n FROM change_counter' });
    this.polledAt = started;
    if (this.counter !== undefined && r!.n !== this.counter) this.version++;
    this.counter = r!.n;
    return this.version;
  }

  /** This node changed something caches may hold (the counter in the database moved too). */
  bump(): void {
    this.version++;
  }
}
