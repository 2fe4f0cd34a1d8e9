// Group commit: the hot path only queues rows in memory; every `intervalMs` one transaction writes
// everything queued, so a busy gateway pays one commit per interval instead of one per request.
// The serving gateway runs that transaction on a worker thread (see writer.ts), so SQLite's B-tree
// and WAL work never runs on the event loop; commands run it inline on their own connection.
// A crash loses the rows not yet committed: at most one interval's worth, plus a batch in flight.
import type { Db } from './open.js';

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
    cache_write_tokens, hold, cost, latency_ms, ttfb_ms, error)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  touchKey: 'UPDATE api_keys SET last_used_at = ? WHERE id = ?',
} as const;

export type BatchStatement = keyof typeof BATCH_SQL;
/** One row write: a statement and its parameters (plain values, cloned to the writer thread). */
export type BatchOp = [statement: BatchStatement, ...params: (string | number | null)[]];

/**
 * A source of queued rows. `take` hands over what is queued (it is then in flight); exactly one of
 * `committed` or `failed` follows. After `failed` the part queues those rows again, ahead of newer ones.
 */
export interface BatchPart {
  take(): BatchOp[];
  committed(): void;
  failed(): void;
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
}

/** Runs a batch's operations in one write transaction; resolves once it committed. */
export interface BatchExecutor {
  run(ops: BatchOp[]): Promise<void>;
}

/** Runs batches on the calling thread's own connection (commands, short-lived stores). */
export function inlineExecutor(db: Db): BatchExecutor {
  const stmts = new Map(Object.entries(BATCH_SQL).map(([name, sql]) => [name, db.prepare(sql)]));
  const apply = db.transaction((ops: BatchOp[]) => {
    for (const [name, ...params] of ops) stmts.get(name)!.run(...params);
  });
  return {
    async run(ops) {
      apply.immediate(ops);
    },
  };
}

export class WriteBatcher {
  private readonly parts: BatchPart[] = [];
  private timer: NodeJS.Timeout | undefined;
  private dirty = false;
  private closed = false;
  /** The batch being written: one at a time, so rows reach the file in the order they were queued. */
  private inFlight: Promise<void> | undefined;

  constructor(
    private readonly executor: BatchExecutor,
    private readonly intervalMs: number,
    private readonly log: (err: unknown) => void = (err) => console.error('store: batch write failed, will retry:', err),
  ) {}

  add(part: BatchPart): void {
    this.parts.push(part);
  }

  /** Called by a part that queued something. */
  schedule(): void {
    this.dirty = true;
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush().catch((err) => this.log(err));
    }, this.intervalMs);
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
    const ops = this.parts.flatMap((p) => p.take());
    const written = this.executor.run(ops).then(
      () => {
        for (const p of this.parts) p.committed();
      },
      (err) => {
        for (const p of this.parts) p.failed();
        this.schedule();
        throw err;
      },
    );
    this.inFlight = written.finally(() => (this.inFlight = undefined));
    await this.inFlight;
  }

  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
  }
}
