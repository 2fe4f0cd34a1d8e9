// The SQLite store: one connection, one write batcher, in-memory ledger state.
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { stderrLogger, type Logger } from '../../log.js';
import type { Store } from '../types.js';
import { SqliteAccounts } from './accounts.js';
import { WriteBatcher, type BatchPart } from '../write-batcher.js';
import { inlineExecutor, newBatch, type Batch } from './batch.js';
import { ChangeWatcher } from './changes.js';
import { SqliteHistory } from './history.js';
import { SqliteApiKeys } from './keys.js';
import { SqliteLedger, releaseAbandonedHolds } from './ledger.js';
import { MonthClock } from '../month.js';
import { lockDatabase } from './lock.js';
import { openDatabase, type Db } from './open.js';
import { SqlitePayments } from './payments.js';
import { SqliteRouting } from './routing.js';
import { SqlitePasswordResets, SqliteSessions } from './sessions.js';
import { StoreWriter } from './writer.js';

/**
 * The writer thread's commits move `PRAGMA data_version` as another process's do, so the first
 * sync() after each batch would read the journal for foreign rows, and at low rates that is every
 * request, before its upstream is called. Checking as each batch lands moves that read off the
 * requests; a foreign commit in between is read then, so sync() still misses nothing.
 */
function takeInOwnCommits(changes: ChangeWatcher): BatchPart<Batch> {
  return {
    take() {},
    unwritten: () => 0,
    failed() {},
    committed() {
      try {
        changes.check();
      } catch {
        // The next sync() reads it again (check() keeps the version it could not read past).
      }
    },
  };
}

/** Owner tokens of the stores open in this process: their holds are never "abandoned". */
const liveTokens = new Set<string>();

export interface SqliteStoreOptions {
  path: string;
  commitIntervalMs: number;
  clock: () => number;
  /** Batches and WAL checkpoints on a worker thread (the serving gateway), else inline. */
  backgroundWriter: boolean;
  /** Where failing or backlogged writes are reported (default: stderr). */
  log?: Logger;
  /** See MAX_UNWRITTEN_ROWS. */
  maxUnwrittenRows?: number;
  /** Hold the file's lock (see lock.ts) until close: the serving gateway. */
  exclusive?: boolean;
  /** Delete history older than this in the background (the serving gateway); absent: never. */
  historyRetentionMs?: number;
}

/** How often the writer thread folds the WAL into the database file. */
const CHECKPOINT_INTERVAL_MS = 1000;

export function openSqliteStore(opts: SqliteStoreOptions): Store {
  // Locked before opening: a refused second server must not touch the file (nor release holds).
  const lock = opts.exclusive && opts.path !== ':memory:' ? lockDatabase(resolve(opts.path)) : undefined;
  const months = new MonthClock(opts.clock);
  const owner = { pid: process.pid, token: randomUUID() };
  const log = opts.log ?? stderrLogger;
  let db: Db | undefined;
  let writer: StoreWriter | undefined;
  try {
    db = openDatabase(opts.path);
    const opened = db;
    opened.transaction(() => releaseAbandonedHolds(opened, months.now(), liveTokens)).immediate();
    if (opts.backgroundWriter && db.name !== ':memory:')
      writer = new StoreWriter(db, CHECKPOINT_INTERVAL_MS, (message) => log('warn', `store writer thread: ${message}`));
  } catch (err) {
    // A failed open must not keep the file, nor its lock (a later start in this process would be refused).
    db?.close();
    lock?.release();
    throw err;
  }
  liveTokens.add(owner.token);
  const batcher = new WriteBatcher(writer ?? inlineExecutor(db), newBatch, opts.commitIntervalMs, { log, maxUnwrittenRows: opts.maxUnwrittenRows });
  const changes = new ChangeWatcher(db);
  const ledger = new SqliteLedger(db, batcher, changes, months, owner);
  const history = new SqliteHistory(db, batcher);
  if (writer) batcher.add(takeInOwnCommits(changes));
  if (opts.historyRetentionMs !== undefined) history.startPruning(opts.historyRetentionMs, opts.clock);
  let closed: Promise<void> | undefined;

  return {
    writes: batcher,
    accounts: new SqliteAccounts(db, changes, months),
    keys: new SqliteApiKeys(db, batcher, changes, months),
    routing: new SqliteRouting(db, changes),
    ledger,
    history,
    sessions: new SqliteSessions(db, months),
    passwordResets: new SqlitePasswordResets(db, months),
    payments: new SqlitePayments(db, ledger, months),
    location: db.name,
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
        ledger.releaseAll();
        history.stopPruning();
        try {
          await batcher.close();
          await writer?.close();
        } finally {
          liveTokens.delete(owner.token);
          db.close();
          lock?.release();
        }
      })();
      return closed;
    },
  };
}
