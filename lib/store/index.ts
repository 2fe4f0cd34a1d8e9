// Opening the store named by the config: SQLite (the embedded default, one serving process) or
// PostgreSQL (any number of nodes).
import type { GatewayConfig } from '../config-types.js';
import { stderrLogger, type Logger } from '../log.js';
import type { Store } from './types.js';
import { openSqliteStore } from './sqlite/store.js';
import { openPostgresStore } from './postgres/store.js';
import { NODE_DEAD_AFTER_MS, type NodeTimings } from './postgres/nodes.js';
import { Db } from './postgres/db.js';
import { migrate as migratePostgres } from './postgres/migrate.js';
import { migrateFile } from './sqlite/open.js';
import { DAY_MS } from './queued-history.js';

export type * from './types.js';
export { StoreError } from './types.js';
export { DatabaseInUseError } from './sqlite/lock.js';
export { SERVING_CHANGE_POLL_MS } from './postgres/changes.js';

export interface StoreOptions {
  /** Milliseconds since the epoch (tests inject one to cross month boundaries). */
  clock?: () => number;
  /** SQLite: write batches and run WAL checkpoints on a worker thread (the serving gateway; short-lived commands need not). */
  backgroundWriter?: boolean;
  /** Where the store reports failing or backlogged writes (default: stderr). */
  log?: Logger;
  /** Rows waiting to be written at which new holds are refused (tests lower it; see MAX_UNWRITTEN_ROWS). */
  maxUnwrittenRows?: number;
  /** SQLite: hold `<db>.lock` while open, so a second serving process on the file refuses to start (the serving gateway). */
  exclusive?: boolean;
  /** Delete history past `history.retention_days` in the background (the serving gateway). */
  pruneHistory?: boolean;
  /**
   * PostgreSQL: sync() asks the database for changes made elsewhere at most this often, answering
   * from the last answer in between (the serving gateway; default 0: at every call).
   */
  changePollMs?: number;
  /** PostgreSQL: listen for changes made elsewhere, polling only while that connection is down (the serving gateway). */
  listenForChanges?: boolean;
}

/**
 * Apply the store's pending migrations and nothing else (`gateway db migrate`); returns where, and
 * the names applied (none: the database was up to date). PostgreSQL: under the advisory lock, so
 * nodes starting meanwhile wait for it.
 */
export async function migrateStore(config: GatewayConfig): Promise<{ location: string; applied: string[] }> {
  if (config.storage.postgres === undefined) return { location: config.storage.sqlite!, applied: migrateFile(config.storage.sqlite!) };
  const db = new Db(config.storage.postgres, stderrLogger, 1);
  try {
    let applied: string[] = [];
    await db.openWith(async () => void (applied = await migratePostgres(db)));
    return { location: db.location, applied };
  } finally {
    await db.close();
  }
}

/** A node failure bound's heartbeat and sweep: the defaults' proportions (1 s and 2 s to 10 s). */
export const nodeTimings = (deadAfterMs: number): NodeTimings => ({ deadAfterMs, heartbeatMs: deadAfterMs / 10, sweepMs: deadAfterMs / 5 });

export function openStore(config: GatewayConfig, opts: StoreOptions = {}): Store {
  const common = {
    commitIntervalMs: config.storage.commit_interval_ms,
    clock: opts.clock ?? Date.now,
    log: opts.log,
    maxUnwrittenRows: opts.maxUnwrittenRows,
    historyRetentionMs: opts.pruneHistory ? config.history.retention_days * DAY_MS : undefined,
  };
  if (config.storage.postgres !== undefined) {
    return openPostgresStore({
      ...common, url: config.storage.postgres, changePollMs: opts.changePollMs, listen: opts.listenForChanges,
      nodeTimings: nodeTimings(config.storage.node_dead_after_ms ?? NODE_DEAD_AFTER_MS),
    });
  }
  return openSqliteStore({ ...common, path: config.storage.sqlite!, backgroundWriter: opts.backgroundWriter ?? false, exclusive: opts.exclusive });
}
