// Group commit: the hot path only queues rows in memory; every `intervalMs` one transaction writes
// everything queued, so a busy gateway pays one commit per interval instead of one per request.
// The serving gateway runs that transaction on a worker thread (see writer.ts), so SQLite's B-tree
// and WAL work never runs on the event loop; commands run it inline on their own connection.
// A crash loses the rows not yet committed: at most one interval's worth, plus a batch in flight.
// While the database refuses or stalls writes (disk full, a long lock), rows wait in memory and
// failed batches are retried with a growing delay; past a bound the ledger admits no new holds
// (requests get a 503), and past twice the bound history rows are dropped, so memory stays bounded
// and no money row is ever dropped.
import type { Logger } from '../../log.js';
import type { Db } from './open.js';

/** Rows waiting to be written (queued or in flight) at which the ledger stops admitting new holds. */
export const MAX_UNWRITTEN_ROWS = 100_000;
/** The longest wait before retrying a failed batch. */
const MAX_RETRY_MS = 1000;
/** While batches keep failing, the log repeats it at most this often. */
const FAILING_LOG_MS = 10_000;

/** The wait before the next batch: the commit interval, doubled for each failure in a row up to MAX_RETRY_MS. */
export function retryDelayMs(intervalMs: number, failures: number): number {
  return failures === 0 ? intervalMs : Math.max(intervalMs, Math.min(MAX_RETRY_MS, intervalMs * 2 ** Math.min(failures, 16)));
}

/** Every statement a batch may run, by name. The writer thread prepares the same table. */
export const BATCH_SQL = {
  insertHold: `INSERT INTO holds (id, account_id, key_id, request_id, amount, status, charged,
    created_at, ended_at, owner_pid, owner_token) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  endHold: `UPDATE holds SET status = ?, charged = ?, ended_at = ? WHERE id = ? AND status = 'open'`,
  insertCharge: `INSERT INTO journal (account_id, key_id, kind, amount, hold_id, created_at)
    VALUES (?, ?, 'charge', ?, ?, ?)`,
  addBalance: `INSERT INTO balances (account_id, balance) VALUES (?, ?)
    ON CONFLICT (account_id) DO UPDATE SET balance = balance + excluded.balance`,
  addSpend: `INSERT INTO key_spend (key_id, month, spent) VALUES (?, ?, ?)
    ON CONFLICT (key_id, month) DO UPDATE SET spent = spent + excluded.spent`,
  // OR IGNORE: a duplicated request id must never fail the batch (and with it every later write).
  insertHistory: `INSERT OR IGNORE INTO request_history (request_id, time, account_id, key_id, route, model,
    listing, attempts, status, http_status, stream, input_tokens, output_tokens, cache_read_tokens,
    cache_write_tokens, cache_write_1h_tokens, hold, cost, latency_ms, ttfb_ms, error, requested_model)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  // A key's refusals past the first few of a minute: one summary row per key and minute, counting them.
  countRefusals: `INSERT INTO request_history (request_id, time, account_id, key_id, route, attempts, status, stream,
    input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, hold, cost, latency_ms, not_recorded)
    VALUES (?, ?, ?, ?, ?, '[]', 'error', 0, 0, 0, 0, 0, 0, 0, 0, ?)
    ON CONFLICT (request_id) DO UPDATE SET not_recorded = not_recorded + excluded.not_recorded`,
  // History past its retention, oldest first, at most 2000 rows per batch: only the first 2000 rows by
  // rowid (about insertion order) are looked at, so a batch never scans the table.
  pruneHistory: `DELETE FROM request_history WHERE rowid IN (SELECT rowid FROM
    (SELECT rowid, time FROM request_history ORDER BY rowid LIMIT 2000) WHERE time < ?)`,
  touchKey: 'UPDATE api_keys SET last_used_at = ? WHERE id = ?',
} as const;

export type BatchStatement = keyof typeof BATCH_SQL;
export type BatchParam = string | number | null;
/**
 * The rows of one batch: per statement, the parameters of its rows one after another (plain
 * values in flat arrays: cheap to fill and to clone to the writer thread). Statements run in
 * BATCH_SQL's order: holds before the charges that refer to them.
 */
export type Batch = Record<BatchStatement, BatchParam[]>;

export function newBatch(): Batch {
  return { insertHold: [], endHold: [], insertCharge: [], addBalance: [], addSpend: [], insertHistory: [], countRefusals: [], pruneHistory: [], touchKey: [] };
}

/**
 * A source of queued rows. `take` adds what is queued to the batch (it is then in flight); exactly
 * one of `committed` or `failed` follows. After `failed` the part queues those rows again, ahead of newer ones.
 */
export interface BatchPart {
  take(batch: Batch): void;
  committed(): void;
  failed(): void;
  /** Rows queued or in flight. */
  unwritten(): number;
}

/** Rows queued by key for the next batch, and the rows of the batch in flight (for a BatchPart). */
export class QueuedRows<K, V> {
  queued = new Map<K, V>();
  inFlight = new Map<K, V>();

  /** Hand over the queued rows: they are in flight now. */
  take(): Map<K, V> {
    this.inFlight = this.queued;
    this.queued = new Map();
    return this.inFlight;
  }

  committed(): void {
    this.inFlight = new Map();
  }

  /** Queue the rows in flight again, ahead of newer ones; a newer row for the same key wins. */
  failed(): void {
    for (const [k, v] of this.queued) this.inFlight.set(k, v);
    this.queued = this.inFlight;
    this.inFlight = new Map();
  }

  get size(): number {
    return this.queued.size + this.inFlight.size;
  }
}

/** Runs a batch in one write transaction; resolves once it committed. */
export interface BatchExecutor {
  run(batch: Batch): Promise<void>;
}

/**
 * Prepares `sql` (BATCH_SQL) on `db` and returns the function that writes a batch in one IMMEDIATE
 * transaction. A plain INSERT takes up to 64 rows per statement (`VALUES (…), (…), …`): one call
 * into SQLite per chunk instead of one per row, a quarter of the writer's CPU. Chunks are powers of
 * two, so at most 7 statements per table are ever prepared. Self-contained (no imports, no outer
 * names): the writer thread is given this function's source.
 */
export function batchWriter(db: Db, sql: Record<string, string>): (batch: Record<string, BatchParam[]>) => void {
  const MAX_ROWS = 64;
  const plans = Object.entries(sql).map(([name, text]) => {
    const width = (text.match(/\?/g) || []).length;
    // Upserts and UPDATEs stay one row per statement.
    const tuple = /^INSERT[^;]*\bVALUES\s*(\([^()]*\))\s*$/i.exec(text);
    const byRows = new Map<number, ReturnType<Db['prepare']>>();
    const statement = (rows: number) => {
      let st = byRows.get(rows);
      if (!st) byRows.set(rows, (st = db.prepare(rows === 1 ? text : text + `, ${tuple![1]}`.repeat(rows - 1))));
      return st;
    };
    return { name, width, maxRows: tuple ? MAX_ROWS : 1, statement };
  });
  const write = db.transaction((batch: Record<string, BatchParam[]>) => {
    for (const p of plans) {
      const params = batch[p.name] || [];
      if (params.length % p.width !== 0) throw new Error(`batch ${p.name}: ${params.length} parameters for rows of ${p.width}`);
      for (let at = 0; at < params.length; ) {
        const rows = Math.min((params.length - at) / p.width, p.maxRows);
        const chunk = 2 ** Math.floor(Math.log2(rows)); // the largest power of two that fits
        const end = at + chunk * p.width;
        p.statement(chunk).run(params.slice(at, end));
        at = end;
      }
    }
  });
  return (batch) => write.immediate(batch);
}

/** Runs batches on the calling thread's own connection (commands, short-lived stores). */
export function inlineExecutor(db: Db): BatchExecutor {
  const write = batchWriter(db, BATCH_SQL);
  return {
    async run(batch) {
      write(batch);
    },
  };
}

export interface WriteBatcherOptions {
  /** See MAX_UNWRITTEN_ROWS (tests lower it). */
  maxUnwrittenRows?: number;
  log?: Logger;
}

export class WriteBatcher {
  private readonly parts: BatchPart[] = [];
  private timer: NodeJS.Timeout | undefined;
  private dirty = false;
  private closed = false;
  /** The batch being written: one at a time, so rows reach the file in the order they were queued. */
  private inFlight: Promise<void> | undefined;
  private readonly maxUnwrittenRows: number;
  private readonly log: Logger;
  /** Failed batches in a row, when the first of them failed, and when the log last said so. */
  private failures = 0;
  private failingSince = 0;
  private failureLoggedAt = 0;
  /** New holds are being refused (see backlogged). */
  private refusing = false;
  private droppedRows = 0;

  constructor(
    private readonly executor: BatchExecutor,
    private readonly intervalMs: number,
    opts: WriteBatcherOptions = {},
  ) {
    this.maxUnwrittenRows = opts.maxUnwrittenRows ?? MAX_UNWRITTEN_ROWS;
    this.log = opts.log ?? (() => {});
  }

  add(part: BatchPart): void {
    this.parts.push(part);
  }

  /** Rows waiting to be written: queued, or in the batch in flight. */
  unwritten(): number {
    let n = 0;
    for (const p of this.parts) n += p.unwritten();
    return n;
  }

  /**
   * Too many rows wait to be written (the database fails or stalls writes): the ledger admits no new
   * hold until they are. Each request would add rows that a crash could lose and memory must hold.
   */
  backlogged(): boolean {
    const unwritten = this.unwritten();
    const over = unwritten >= this.maxUnwrittenRows;
    if (over !== this.refusing) {
      this.refusing = over;
      if (over) this.log('error', 'store: too many rows wait to be written; new requests get 503 until they are', { unwritten });
      else this.log('info', 'store: the rows waiting to be written are down again; requests are admitted', { unwritten });
    }
    return over;
  }

  /**
   * Twice the bound: a part may drop rows that are not money (a history row) instead of queuing
   * them, and says so here. Open holds can still end (their rows are bounded by the open holds).
   */
  full(): boolean {
    return this.unwritten() >= 2 * this.maxUnwrittenRows;
  }

  dropped(what: string): void {
    if (this.droppedRows++ === 0) this.log('error', `store: ${what}s are being dropped: too many rows wait to be written`, { unwritten: this.unwritten() });
  }

  /** Called by a part that queued something. */
  schedule(): void {
    this.dirty = true;
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush().catch(() => {}); // logged by flush, and retried
    }, retryDelayMs(this.intervalMs, this.failures));
  }

  /** Write everything queued now, in one transaction; on failure the rows stay queued for a retry. */
  async flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    while (this.inFlight) await this.inFlight.catch(() => {});
    if (!this.dirty) return;
    this.dirty = false;
    const batch = newBatch();
    for (const p of this.parts) p.take(batch);
    const written = this.executor.run(batch).then(
      () => {
        for (const p of this.parts) p.committed();
        this.recovered();
      },
      (err) => {
        for (const p of this.parts) p.failed();
        this.failedAgain(err);
        this.schedule();
        throw err;
      },
    );
    this.inFlight = written.finally(() => (this.inFlight = undefined));
    await this.inFlight;
  }

  private failedAgain(err: unknown): void {
    const now = Date.now();
    if (this.failures++ === 0) {
      this.failingSince = now;
      this.log('error', 'store: a batch write failed; its rows stay queued and are retried', { err, unwritten: this.unwritten() });
    } else if (now - this.failureLoggedAt >= FAILING_LOG_MS) {
      this.log('error', 'store: batch writes are still failing', {
        err, failed_attempts: this.failures, seconds: Math.round((now - this.failingSince) / 1000), unwritten: this.unwritten(),
      });
    } else return;
    this.failureLoggedAt = now;
  }

  private recovered(): void {
    if (this.failures === 0 && this.droppedRows === 0) return;
    const failing = this.failures > 0 ? { failed_attempts: this.failures, seconds: Math.round((Date.now() - this.failingSince) / 1000) } : {};
    this.log('info', 'store: a batch was written after a backlog', { ...failing, dropped_rows: this.droppedRows, unwritten: this.unwritten() });
    this.failures = 0;
    this.droppedRows = 0;
  }

  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
  }
}
