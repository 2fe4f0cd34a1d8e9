// Seeing other nodes' changes: the change counter (migration 001) moves whenever keys, routing or
// accounts change, on any node or from the command line, and each move is announced on the channel
// gateway_changes (migration 002). A serving node listens (ChangeListener): an announcement moves
// `version` as it arrives, and sync() answers without asking the database. Without a listener (the
// command line), or while the listening connection is down, sync() polls the counter instead, one
// single-row read: `pollMs` spaces the polls, sync() answering from the last poll while it is younger
// than that, so a node under load reads the counter a few times a second instead of once per
// request, and a change made elsewhere is seen within `pollMs` (plus a round trip). Callers arriving
// while a poll is in flight share it. This node's own changes count at once (bump).
import type { Db } from './db.js';
import type { MaybePromise } from '../../maybe-promise.js';

/**
 * The serving gateway's spacing of polls while it is not listening: a change made on another node
 * or from the command line is honoured within about 100 ms, and a node reads the counter at most
 * 10 times a second however many requests it serves (instead of a round trip per request).
 */
export const SERVING_CHANGE_POLL_MS = 100;

export class ChangeCounter {
  /** Moves on every change that may affect cached keys, routing or accounts. */
  version = 0;
  /** Set while announcements arrive: sync() then needs no poll. */
  listener: { readonly listening: boolean } | undefined;
  private counter: number | undefined;
  private polledAt = -Infinity;
  private polling: Promise<number> | undefined;

  constructor(private readonly db: Db, private readonly pollMs: number) {}

  /** The database's counter as last read or announced. */
  get seen(): number | undefined {
    return this.counter;
  }

  check(): MaybePromise<number> {
    if (this.listener?.listening) return this.version;
    if (performance.now() - this.polledAt < this.pollMs) return this.version;
    this.polling ??= this.poll().finally(() => (this.polling = undefined));
    return this.polling;
  }

  private async poll(): Promise<number> {
    const started = performance.now();
    const r = await this.db.one<{ n: number }>({ name: 'gateway_changes', text: 'SELECT n FROM change_counter' });
    this.polledAt = started;
    this.saw(r!.n);
    return this.version;
  }

  /** The counter as read from the database (a poll, or the listener's check). */
  saw(n: number): void {
    if (this.counter !== undefined && n !== this.counter) this.version++;
    this.counter = n;
  }

  /**
   * The counter as announced. It only grows, so an announcement older than what a read already
   * showed is no news (announcements are sent at commit and may arrive after a read that saw it).
   */
  announced(n: number): void {
    if (this.counter !== undefined && n <= this.counter) return;
    this.version++;
    this.counter = n;
  }

  /** This node changed something caches may hold (the counter in the database moved too). */
  bump(): void {
    this.version++;
  }
}
