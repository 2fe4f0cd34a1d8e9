// The SQLite store's batches (see ../write-batcher.ts for the group commit): the statements a batch
// runs, and the function that writes one. The serving gateway runs that transaction on a worker
// thread (see writer.ts), so SQLite's B-tree and WAL work never runs on the event loop; commands run
// it inline on their own connection.
import type { Statement } from 'better-sqlite3';
import { PRUNE_BATCH_ROWS } from '../queued-history.js';
import type { BatchExecutor } from '../write-batcher.js';
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
    cache_write_tokens, cache_write_1h_tokens, hold, cost, latency_ms, ttfb_ms, error, requested_model)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  // A key's refusals past the first few of a minute: one summary row per key and minute, counting them.
  countRefusals: `INSERT INTO request_history (request_id, time, account_id, key_id, route, attempts, status, stream,
    input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, hold, cost, latency_ms, not_recorded)
    VALUES (?, ?, ?, ?, ?, '[]', 'error', 0, 0, 0, 0, 0, 0, 0, 0, ?)
    ON CONFLICT (request_id) DO UPDATE SET not_recorded = not_recorded + excluded.not_recorded`,
  // History past its retention, oldest first, at most PRUNE_BATCH_ROWS per batch: only the first rows by
  // rowid (about insertion order) are looked at, so a batch never scans the table.
  pruneHistory: `DELETE FROM request_history WHERE rowid IN (SELECT rowid FROM
    (SELECT rowid, time FROM request_history ORDER BY rowid LIMIT ${PRUNE_BATCH_ROWS}) WHERE time < ?)`,
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
    const byRows = new Map<number, Statement<BatchParam[]>>();
    const statement = (rows: number) => {
      let st = byRows.get(rows);
      if (!st) byRows.set(rows, (st = db.prepare<BatchParam[]>(rows === 1 ? text : text + `, ${tuple![1]}`.repeat(rows - 1))));
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
        // As arguments, not one array: better-sqlite3 reads an array's elements one by one through
        // V8's API (a property lookup each). Rows of 11 values inserted 64 at a time (in memory):
        // 0.97 µs a row against 1.86 (medians of 10 runs each).
        p.statement(chunk).run(...params.slice(at, end));
        at = end;
      }
    }
  });
  return (batch) => write.immediate(batch);
}

/** Runs batches on the calling thread's own connection (commands, short-lived stores). */
export function inlineExecutor(db: Db): BatchExecutor<Batch> {
  const write = batchWriter(db, BATCH_SQL);
  return {
    async run(batch) {
      write(batch);
    },
  };
}
