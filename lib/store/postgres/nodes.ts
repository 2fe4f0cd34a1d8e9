// The gateway processes sharing the database. Each store registers itself as a node (a random id
// per process), heartbeats every HEARTBEAT_MS and sweeps every SWEEP_MS: a node whose heartbeat is
// older than NODE_DEAD_AFTER_MS (on the database's clock) is gone, and any other node releases its
// open holds, deletes its credit leases (leases.ts) and deletes its row. A hold is ended by a conditional UPDATE … WHERE status = 'open',
// so when the owner and a sweeper race, exactly one of them ends it. A dead node's holds and leases are thus
// released within NODE_DEAD_AFTER_MS + SWEEP_MS of its last heartbeat (about 12 seconds).
// A node that was only slow (its event loop or its connection stalled past the bound) finds its
// row gone at its next heartbeat: it registers again and says so; the charges of the holds the
// others released are not recorded (no overspend: those holds ended without a charge).
// A node that could not reach the database does not sweep until it has been back for a whole
// bound: after an outage every node's last heartbeat is old, and the first node back must not take
// the others, which have not had their chance to beat yet, for dead.
// Each heartbeat also counts the live nodes (this one included): per-node limits (rate limits,
// login back-off) take 1/N of their allowance each, with no round trip per request.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from '../../log.js';
import type { Db } from './db.js';

export const HEARTBEAT_MS = 1000;
export const SWEEP_MS = 2000;
export const NODE_DEAD_AFTER_MS = 10_000;

export interface NodeTimings {
  heartbeatMs: number;
  sweepMs: number;
  deadAfterMs: number;
}

export const DEFAULT_NODE_TIMINGS: NodeTimings = { heartbeatMs: HEARTBEAT_MS, sweepMs: SWEEP_MS, deadAfterMs: NODE_DEAD_AFTER_MS };

const REGISTER = `INSERT INTO nodes (id, host, pid, started_at, heartbeat_at) VALUES ($1, $2, $3, gateway_now_ms(), gateway_now_ms())
  ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`;

/** Beat, and count the other nodes alive (the same bound as the sweep's). */
const HEARTBEAT = `WITH beat AS (UPDATE nodes SET heartbeat_at = gateway_now_ms() WHERE id = $1 RETURNING id)
  SELECT (SELECT COUNT(*) FROM beat) AS beat,
    (SELECT COUNT(*) FROM nodes WHERE id <> $1 AND heartbeat_at >= gateway_now_ms() - $2) AS others`;

/**
 * Holds whose node has not heartbeaten within the bound (or has no row: it closed with holds it
 * could not end, or was deleted by an earlier sweep) are released; then the silent nodes' rows go.
 * One statement: both see the same snapshot, so a node that heartbeats meanwhile keeps its holds.
 */
const SWEEP = `WITH alive AS (SELECT id FROM nodes WHERE heartbeat_at >= gateway_now_ms() - $1),
  released AS (UPDATE holds SET status = 'released', ended_at = $2
    WHERE status = 'open' AND node_id <> $3 AND node_id NOT IN (SELECT id FROM alive) RETURNING node_id),
  unleased AS (DELETE FROM leases WHERE node_id <> $3 AND node_id NOT IN (SELECT id FROM alive) RETURNING node_id),
  gone AS (DELETE FROM nodes WHERE id <> $3 AND id NOT IN (SELECT id FROM alive) RETURNING id)
  SELECT (SELECT COUNT(*) FROM released) AS holds, (SELECT COUNT(*) FROM gone) AS nodes, (SELECT COUNT(*) FROM unleased) AS leases,
    ARRAY(SELECT DISTINCT node_id FROM released UNION SELECT node_id FROM unleased) AS owners`;

export class NodeRegistry {
  /** This process's node id: on every hold it creates. */
  readonly id = randomUUID();
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Until this time (ms, the store's clock) this node does not sweep: it lately failed to reach the database. */
  private noSweepBefore = 0;
  private live = 1;
  /** Why the last heartbeat or sweep failed; null once one succeeds. */
  private lastFailure: string | null = null;
  /** When the last heartbeat the database took was sent (this node's clock). */
  private lastBeatSentAt = -Infinity;
  /** Called when a heartbeat finds this node's row gone (it was taken for dead and swept). */
  takenForDead: (() => void) | undefined;
  /** Settles once start()'s first heartbeat and sweep were answered or failed (tests wait for it). */
  started: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly clock: () => number,
    private readonly log: Logger,
    readonly timings: NodeTimings = DEFAULT_NODE_TIMINGS,
  ) {}

  /** Part of the store's opening: a node is registered before it creates any hold (a sweeper would take the hold for an orphan). */
  async register(): Promise<void> {
    const sentAt = this.clock();
    await this.db.direct(REGISTER, [this.id, hostname(), process.pid]);
    this.lastBeatSentAt = sentAt;
  }

  /** Heartbeat and sweep in the background, the first sweep at once (the holds of nodes already gone). */
  start(): void {
    if (this.stopped) return; // closed before it opened
    // A failure is the store's to report (the database is unreachable): the next tick tries again.
    const sweep = () => this.sweep().catch(() => {});
    const beat = () => this.heartbeat().catch(() => {});
    this.heartbeatTimer = setInterval(beat, this.timings.heartbeatMs);
    this.sweepTimer = setInterval(sweep, this.timings.sweepMs);
    this.heartbeatTimer.unref();
    this.sweepTimer.unref();
    // The live count at once, not a heartbeat later.
    this.started = Promise.all([beat(), sweep()]).then(() => {});
  }

  /**
   * Gateway nodes alive at the last heartbeat (this one and those that beat within the bound), at
   * least 1. While the database is away it stays as last seen.
   */
  liveNodes(): number {
    return this.live;
  }

  /**
   * Whether no other node can have taken this one for dead yet: its last heartbeat was sent less than
   * the bound ago (less a margin). Leased credit is admitted on only while this holds (see leases.ts).
   */
  beatRecently(marginMs: number): boolean {
    return this.clock() - this.lastBeatSentAt < this.timings.deadAfterMs - marginMs;
  }

  async heartbeat(): Promise<void> {
    if (this.stopped) return;
    const sentAt = this.clock();
    const r = (await this.reaching(this.db.one<{ beat: number; others: number }>(HEARTBEAT, [this.id, this.timings.deadAfterMs])))!;
    this.live = 1 + Number(r.others);
    if (Number(r.beat) > 0) this.lastBeatSentAt = Math.max(this.lastBeatSentAt, sentAt);
    if (Number(r.beat) > 0 || this.stopped) return;
    // Swept: its leases are gone, and their credit may be leased by others already.
    this.takenForDead?.();
    this.log('error', 'store: this node was taken for dead (no heartbeat within the bound) and other nodes released its holds and leases; ' +
      'charges of requests it had in flight are not recorded. It registers again.', { node: this.id, dead_after_ms: this.timings.deadAfterMs });
    const again = this.clock();
    await this.db.query(REGISTER, [this.id, hostname(), process.pid]);
    this.lastBeatSentAt = again;
  }

  /** Release the open holds of nodes gone silent; returns how many. */
  async sweep(): Promise<number> {
    if (this.stopped || this.clock() < this.noSweepBefore) return 0;
    const r = (await this.reaching(this.db.one<{ holds: number; nodes: number; leases: number; owners: string[] }>(SWEEP, [this.timings.deadAfterMs, this.clock(), this.id])))!;
    if (r.holds > 0 || r.nodes > 0 || r.leases > 0) {
      this.log('warn', 'store: released the open holds and leases of gateway nodes that stopped heartbeating',
        { holds: r.holds, leases: r.leases, nodes: r.nodes, owners: r.owners });
    }
    return r.holds;
  }

  /** Why the database was unreachable at the last heartbeat or sweep (readiness), or null. */
  unreachable(): string | null {
    return this.lastFailure;
  }

  /** The query's result; when it fails (the database away), no sweep for a whole bound after the last failure. */
  private async reaching<R>(query: Promise<R>): Promise<R> {
    try {
      const r = await query;
      this.lastFailure = null;
      return r;
    } catch (err) {
      this.lastFailure = `database unreachable: ${(err as Error).message}`;
      this.noSweepBefore = this.clock() + this.timings.deadAfterMs + this.timings.heartbeatMs;
      throw err;
    }
  }

  /** Stop the timers; `forget`: delete this node's row (its holds are all ended). */
  async stop(forget: boolean): Promise<void> {
    this.stopped = true;
    clearInterval(this.heartbeatTimer);
    clearInterval(this.sweepTimer);
    if (forget) await this.db.query('DELETE FROM nodes WHERE id = $1', [this.id]);
  }
}
