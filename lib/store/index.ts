// Opening the store named by the config. SQLite is the embedded default (and the only backend yet).
import type { GatewayConfig } from '../config-types.js';
import type { Logger } from '../log.js';
import type { Store } from './types.js';
import { openSqliteStore } from './sqlite/store.js';
import { DAY_MS } from './queued-history.js';

export type * from './types.js';
export { StoreError } from './types.js';
export { DatabaseInUseError } from './sqlite/lock.js';

export interface StoreOptions {
  /** Milliseconds since the epoch (tests inject one to cross month boundaries). */
  clock?: () => number;
  /** Write batches and run WAL checkpoints on a worker thread (the serving gateway; short-lived commands need not). */
  backgroundWriter?: boolean;
  /** Where the store reports failing or backlogged writes (default: stderr). */
  log?: Logger;
  /** Rows waiting to be written at which new holds are refused (tests lower it; see MAX_UNWRITTEN_ROWS). */
  maxUnwrittenRows?: number;
  /** Hold `<db>.lock` while open, so a second serving process on the file refuses to start (the serving gateway). */
  exclusive?: boolean;
  /** Delete history past `history.retention_days` in the background (the serving gateway). */
  pruneHistory?: boolean;
}

export function openStore(config: GatewayConfig, opts: StoreOptions = {}): Store {
  return openSqliteStore({
    path: config.storage.sqlite!,
    commitIntervalMs: config.storage.commit_interval_ms ?? 20,
    clock: opts.clock ?? Date.now,
    backgroundWriter: opts.backgroundWriter ?? false,
    log: opts.log,
    maxUnwrittenRows: opts.maxUnwrittenRows,
    exclusive: opts.exclusive,
    historyRetentionMs: opts.pruneHistory ? config.history.retention_days * DAY_MS : undefined,
  });
}
