// The PostgreSQL store: a connection pool shared by the store's parts, one write batcher, and this
// process's node (heartbeat, and the sweep of dead nodes' holds). Opening returns at once; the
// migrations and the node's registration run first, and every query waits for them (sync()
// resolves once they are done, or rejects with the reason they failed, as every query then does).
import { stderrLogger, type Logger } from '../../log.js';
import { MonthClock } from '../month.js';
import type { Store } from '../types.js';
import { WriteBatcher } from '../write-batcher.js';
import { PgAccounts } from './accounts.js';
import { newPgBatch, pgExecutor } from './batch.js';
import { ChangeCounter } from './changes.js';
import { Db } from './db.js';
import { ChangeListener, DEFAULT_LISTENER_TIMINGS, type ListenerTimings } from './listener.js';
import { PgHistory } from './history.js';
import { PgApiKeys } from './keys.js';
import { PgLedger } from './ledger.js';
import { VALIDITY_MARGIN_MS } from './leases.js';
import { migrate } from './migrate.js';
import { DEFAULT_NODE_TIMINGS, NodeRegistry, type NodeTimings } from './nodes.js';
import { PgPayments } from './payments.js';
import { PgRouting } from './routing.js';
import { PgPasswordResets, PgSessions } from './sessions.js';

export interface PostgresStoreOptions {
  /** postgres://user:password@host:5432/dbname */
  url: string;
  commitIntervalMs: number;
  clock: () => number;
  /** Where failing or backlogged writes and an unreachable database are reported (default: stderr). */
  log?: Logger;
  /** See MAX_UNWRITTEN_ROWS. */
  maxUnwrittenRows?: number;
  /** Delete history older than this in the background (the serving gateway); absent: never. */
  historyRetentionMs?: number;
  /** sync() asks the database at most this often while not listening (see ChangeCounter); 0: at every call. */
  changePollMs?: number;
  /** Keep a connection listening for changes and for lease messages, and admit on leased credit (the serving gateway; see ChangeListener, leases.ts). */
  listen?: boolean;
  /** The listener's safety read and reconnect delays (tests change them). */
  listenerTimings?: Partial<ListenerTimings>;
  /** Heartbeat, sweep and dead-node bound (tests shorten them). */
  nodeTimings?: Partial<NodeTimings>;
  /** Connections in the pool. */
  poolSize?: number;
}

export type PostgresStore = Store & {
  readonly nodeId: string;
  readonly nodes: NodeRegistry;
  /** Other nodes' changes as this node has seen them. */
  readonly changes: ChangeCounter;
  /** Present when opened with `listen`. */
  readonly listener: ChangeListener | undefined;
};

export function openPostgresStore(opts: PostgresStoreOptions): PostgresStore {
  const log = opts.log ?? stderrLogger;
  const months = new MonthClock(opts.clock);
  const db = new Db(opts.url, log, opts.poolSize);
  const nodes = new NodeRegistry(db, opts.clock, log, { ...DEFAULT_NODE_TIMINGS, ...opts.nodeTimings });
  const changes = new ChangeCounter(db, opts.changePollMs ?? 0);
  // Listening starts once migrated: the announcing trigger is migration 002.
  const listener = opts.listen
    ? new ChangeListener(opts.url, changes, log, `llm-gateway changes ${nodes.id}`, { ...DEFAULT_LISTENER_TIMINGS, ...opts.listenerTimings })
    : undefined;
  db.openWith(async () => {
    await migrate(db);
    await nodes.register();
  }).then(() => {
    nodes.start();
    ledger.startReconciling(nodes.timings.sweepMs);
    listener?.start();
  }, () => {}); // a failed opening is every query's error (sync() reports it)
  const batcher = new WriteBatcher(pgExecutor(db, nodes.id), newPgBatch, opts.commitIntervalMs, { log, maxUnwrittenRows: opts.maxUnwrittenRows });
  const ledger = new PgLedger(db, batcher, changes, months, nodes.id, log);
  if (listener) {
    // A serving node admits on leased credit (leases.ts) while it hears the lease channel and beats.
    const book = ledger.enableLeases(() => listener.listening && nodes.beatRecently(VALIDITY_MARGIN_MS), opts.clock, () => listener.listeningSchema);
    listener.leaseMessage = (what, accountId, owner) => ledger.heardOnLeaseChannel(what, accountId, owner);
    listener.deaf = () => book.returnAll();
    nodes.takenForDead = () => book.forgetAll();
  }
  const history = new PgHistory(db, batcher);
  if (opts.historyRetentionMs !== undefined) history.startPruning(opts.historyRetentionMs, opts.clock);
  let closed: Promise<void> | undefined;

  return {
    writes: {
      unwritten: () => batcher.unwritten(),
      // An idle node queues nothing, so its batches cannot tell an unreachable database: the heartbeat can.
      problem: () => batcher.problem() ?? nodes.unreachable(),
      observe: (o) => batcher.observe(o),
    },
    accounts: new PgAccounts(db, changes, months),
    keys: new PgApiKeys(db, batcher, changes, months),
    routing: new PgRouting(db, changes),
    ledger,
    history,
    sessions: new PgSessions(db, months),
    passwordResets: new PgPasswordResets(db, months),
    payments: new PgPayments(db, ledger, months),
    location: db.location,
    nodeId: nodes.id,
    nodes,
    liveNodes: () => nodes.liveNodes(),
    changes,
    listener,
    sync() {
      return changes.check();
    },
    changeVersion() {
      return changes.version;
    },
    flush() {
      return batcher.flush();
    },
    close() {
      closed ??= (async () => {
        history.stopPruning();
        await listener?.stop();
        try {
          await ledger.releaseAll();
          await batcher.close();
          // Its leases, returned by that batch, go too; if this fails, the sweep deletes them with the node's row.
          await ledger.dropLeases().catch(() => {});
          // Every hold of this node is ended in the database: its row can go. When the last batch
          // failed, the row stays, and another node releases the holds once the heartbeat is old enough.
          await nodes.stop(true).catch(() => {});
        } finally {
          await nodes.stop(false);
          await db.close();
        }
      })();
      return closed;
    },
  };
}
