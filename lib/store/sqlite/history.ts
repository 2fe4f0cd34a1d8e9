// Request history: one row per authenticated request, queued and written with the next batch;
// refusals past a key's first few in a minute are counted in a summary row instead (RefusalCounts).
// Reads merge the rows not yet confirmed written, and leave out their stored copies (a batch can
// be in the file before the writer thread's confirmation arrives), so nothing counts twice.
// Rows older than the retention are deleted in the background, a bounded number per batch.
import type { DailyUsage, History, HistoryQuery, HistoryRow } from '../types.js';
import { QueuedRows, type Batch, type BatchPart, type WriteBatcher } from './batch.js';
import { notRecordedMessage, RefusalCounts } from './refusal-counts.js';
import type { Statement } from 'better-sqlite3';
import type { Db } from './open.js';

interface Row {
  request_id: string;
  time: number;
  account_id: number;
  key_id: number;
  route: HistoryRow['route'];
  model: string | null;
  requested_model: string | null;
  listing: string | null;
  attempts: string;
  status: HistoryRow['status'];
  http_status: number | null;
  stream: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  cache_write_1h_tokens: number;
  hold: number;
  cost: number;
  latency_ms: number;
  ttfb_ms: number | null;
  error: string | null;
  not_recorded: number;
}

export const DAY_MS = 86_400_000;
/** How often the oldest row is checked against the retention (one indexed read on the event loop). */
export const PRUNE_CHECK_MS = 1000;

/** The query as SQL conditions on an account's rows, and as a test for rows not yet written. */
function conditions(q: HistoryQuery): { sql: string; params: (string | number)[]; test: (h: HistoryRow) => boolean } {
  const sql: string[] = [];
  const params: (string | number)[] = [];
  const tests: ((h: HistoryRow) => boolean)[] = [];
  if (q.model !== undefined) {
    sql.push('model = ?');
    params.push(q.model);
    tests.push((h) => h.model === q.model);
  }
  if (q.status !== undefined) {
    sql.push('status = ?');
    params.push(q.status);
    tests.push((h) => h.status === q.status);
  }
  if (q.from !== undefined) {
    sql.push('time >= ?');
    params.push(q.from);
    tests.push((h) => h.time >= q.from!);
  }
  if (q.to !== undefined) {
    sql.push('time < ?');
    params.push(q.to);
    tests.push((h) => h.time < q.to!);
  }
  const after = q.after;
  if (after) {
    sql.push('(time < ? OR (time = ? AND request_id < ?))');
    params.push(after.time, after.time, after.requestId);
    tests.push((h) => newestFirst(h, { time: after.time, requestId: after.requestId }) > 0);
  }
  return { sql: sql.map((c) => ` AND ${c}`).join(''), params, test: (h) => tests.every((t) => t(h)) };
}

/** List order: newest arrival first, then the larger request id. */
const newestFirst = (a: Pick<HistoryRow, 'time' | 'requestId'>, b: Pick<HistoryRow, 'time' | 'requestId'>) =>
  b.time - a.time || (a.requestId < b.requestId ? 1 : a.requestId > b.requestId ? -1 : 0);

const fromRow = (r: Row): HistoryRow => ({
  requestId: r.request_id, time: r.time, accountId: r.account_id, keyId: r.key_id, route: r.route,
  model: r.model, requestedModel: r.requested_model, listing: r.listing, attempts: JSON.parse(r.attempts), status: r.status,
  httpStatus: r.http_status, stream: r.stream === 1,
  usage: { input: r.input_tokens, output: r.output_tokens, cacheRead: r.cache_read_tokens, cacheWrite: r.cache_write_tokens, cacheWrite1h: r.cache_write_1h_tokens },
  holdNano: r.hold, costNano: r.cost, latencyMs: r.latency_ms, ttfbMs: r.ttfb_ms,
  ...(r.not_recorded > 0 ? { error: notRecordedMessage(r.not_recorded), notRecorded: r.not_recorded } : { error: r.error }),
});

/** Requests a row stands for: a summary row stands for the refusals it counts. */
const requestsOf = (h: HistoryRow) => h.notRecorded ?? 1;

export class SqliteHistory implements History, BatchPart {
  private readonly stmt;
  /** Rows not yet confirmed written, by request id (readable before they reach the file). */
  private readonly rows = new QueuedRows<string, HistoryRow>();
  /** list() statements by their conditions (a handful of shapes). */
  private readonly listBy = new Map<string, Statement>();
  private readonly refusals = new RefusalCounts();
  /** Rows that arrived before this are past the retention (set by the prune check, taken by the next batch). */
  private pruneBefore: number | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;

  constructor(private readonly db: Db, private readonly batcher: WriteBatcher) {
    this.stmt = {
      get: db.prepare('SELECT * FROM request_history WHERE request_id = ?'),
      daily: db.prepare(`SELECT time / ${DAY_MS} AS day, SUM(MAX(1, not_recorded)) AS requests, SUM(cost) AS cost FROM request_history
        WHERE account_id = ? AND time >= ? AND time < ? AND request_id NOT IN (SELECT value FROM json_each(?)) GROUP BY day`),
      oldest: db.prepare('SELECT time FROM request_history ORDER BY rowid LIMIT 1').pluck(),
    };
    batcher.add(this);
  }

  record(row: HistoryRow): void {
    // Not money: dropped rather than held in memory without bound while the database refuses writes.
    if (this.batcher.full()) return this.batcher.dropped('history row');
    this.rows.queued.set(row.requestId, row);
    this.batcher.schedule();
  }

  recordRefusal(row: HistoryRow): void {
    if (this.refusals.admit(row)) return this.record(row);
    this.batcher.schedule();
  }

  refusalsNotRecorded(): number {
    return this.refusals.total;
  }

  /**
   * Delete rows that arrived more than `retentionMs` before `clock()`, in the background: every
   * PRUNE_CHECK_MS the oldest row is looked at, and if it is past the retention the next batch
   * deletes up to 2000 of the oldest rows (see BATCH_SQL.pruneHistory), so the writer is never
   * stalled by one large delete. Stopped by stopPruning.
   */
  startPruning(retentionMs: number, clock: () => number): void {
    this.stopPruning();
    this.pruneTimer = setInterval(() => this.checkRetention(retentionMs, clock), PRUNE_CHECK_MS);
    this.pruneTimer.unref();
    this.checkRetention(retentionMs, clock);
  }

  /** The oldest row (the lowest rowid: about the first written) is past the retention: the next batch prunes. */
  checkRetention(retentionMs: number, clock: () => number): void {
    const cutoff = clock() - retentionMs;
    const oldest = this.stmt.oldest.get() as number | undefined;
    if (oldest === undefined || oldest >= cutoff) return;
    this.pruneBefore = cutoff;
    this.batcher.schedule();
  }

  stopPruning(): void {
    clearInterval(this.pruneTimer);
    this.pruneTimer = undefined;
  }

  /** Rows not yet confirmed written: queued or in flight (summary rows with their counts so far). */
  private unconfirmed(): HistoryRow[] {
    return [...this.rows.inFlight.values(), ...this.rows.queued.values(), ...this.refusals.unconfirmed()];
  }

  async get(requestId: string): Promise<HistoryRow | null> {
    const queued = this.rows.queued.get(requestId) ?? this.rows.inFlight.get(requestId) ??
      this.refusals.unconfirmed().find((r) => r.requestId === requestId);
    if (queued) return queued;
    const r = this.stmt.get.get(requestId) as Row | undefined;
    return r ? fromRow(r) : null;
  }

  async list(accountId: number, opts: HistoryQuery = {}): Promise<HistoryRow[]> {
    const limit = opts.limit ?? 20;
    const where = conditions(opts);
    const unconfirmed = this.unconfirmed();
    const queued = unconfirmed.filter((r) => r.accountId === accountId && where.test(r));
    const queuedIds = new Set(unconfirmed.map((r) => r.requestId));
    let select = this.listBy.get(where.sql);
    if (!select) {
      select = this.db.prepare(`SELECT * FROM request_history WHERE account_id = ?${where.sql} ORDER BY time DESC, request_id DESC LIMIT ?`);
      this.listBy.set(where.sql, select);
    }
    // Enough stored rows to fill the page even if some are copies of unconfirmed ones.
    const stored = (select.all(accountId, ...where.params, limit + queuedIds.size) as Row[])
      .filter((r) => !queuedIds.has(r.request_id))
      .map(fromRow);
    return [...queued, ...stored].sort(newestFirst).slice(0, limit);
  }

  async daily(accountId: number, from: number, to: number): Promise<DailyUsage[]> {
    const days = new Map<number, DailyUsage>();
    const unconfirmed = this.unconfirmed();
    const ids = JSON.stringify(unconfirmed.map((h) => h.requestId));
    for (const r of this.stmt.daily.all(accountId, from, to, ids) as { day: number; requests: number; cost: number }[]) {
      days.set(r.day, { day: r.day * DAY_MS, requests: r.requests, costNano: r.cost });
    }
    for (const h of unconfirmed) {
      if (h.accountId !== accountId || h.time < from || h.time >= to) continue;
      const key = Math.floor(h.time / DAY_MS);
      const d = days.get(key) ?? { day: key * DAY_MS, requests: 0, costNano: 0 };
      d.requests += requestsOf(h);
      d.costNano += h.costNano;
      days.set(key, d);
    }
    return [...days.values()].sort((a, b) => a.day - b.day);
  }

  take(batch: Batch): void {
    const rows = batch.insertHistory;
    for (const h of this.rows.take().values()) {
      const u = h.usage;
      rows.push(h.requestId, h.time, h.accountId, h.keyId, h.route, h.model, h.listing,
        JSON.stringify(h.attempts), h.status, h.httpStatus, h.stream ? 1 : 0, u.input, u.output, u.cacheRead,
        u.cacheWrite, u.cacheWrite1h, h.holdNano, h.costNano, Math.round(h.latencyMs), h.ttfbMs === null ? null : Math.round(h.ttfbMs), h.error,
        h.requestedModel ?? null);
    }
    this.refusals.take(batch);
    if (this.pruneBefore !== undefined) batch.pruneHistory.push(this.pruneBefore);
    this.pruneBefore = undefined; // a failed prune is not retried: the next check asks again
  }

  unwritten(): number {
    return this.rows.size + this.refusals.unwritten();
  }

  committed(): void {
    this.rows.committed();
    this.refusals.committed();
  }

  failed(): void {
    this.rows.failed();
    this.refusals.failed();
  }
}
