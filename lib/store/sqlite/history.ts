// Request history: one row per authenticated request, queued and written with the next batch.
import type { DailyUsage, History, HistoryQuery, HistoryRow } from '../types.js';
import type { BatchPart, WriteBatcher } from './batch.js';
import type { Statement } from 'better-sqlite3';
import type { Db } from './open.js';

interface Row {
  request_id: string;
  time: number;
  account_id: number;
  key_id: number;
  route: HistoryRow['route'];
  model: string | null;
  listing: string | null;
  attempts: string;
  status: HistoryRow['status'];
  http_status: number | null;
  stream: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  hold: number;
  cost: number;
  latency_ms: number;
  ttfb_ms: number | null;
  error: string | null;
}

const DAY_MS = 86_400_000;

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
  model: r.model, listing: r.listing, attempts: JSON.parse(r.attempts), status: r.status,
  httpStatus: r.http_status, stream: r.stream === 1,
  usage: { input: r.input_tokens, output: r.output_tokens, cacheRead: r.cache_read_tokens, cacheWrite: r.cache_write_tokens },
  holdNano: r.hold, costNano: r.cost, latencyMs: r.latency_ms, ttfbMs: r.ttfb_ms, error: r.error,
});

export class SqliteHistory implements History, BatchPart {
  private readonly stmt;
  /** Rows not yet written, by request id (readable before they reach the file). */
  private pending = new Map<string, HistoryRow>();
  /** list() statements by their conditions (a handful of shapes). */
  private readonly listBy = new Map<string, Statement>();

  constructor(private readonly db: Db, private readonly batcher: WriteBatcher) {
    this.stmt = {
      // OR IGNORE: a duplicated request id must never fail the batch (and with it every later write).
      insert: db.prepare(`INSERT OR IGNORE INTO request_history (request_id, time, account_id, key_id, route, model,
        listing, attempts, status, http_status, stream, input_tokens, output_tokens, cache_read_tokens,
        cache_write_tokens, hold, cost, latency_ms, ttfb_ms, error)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      get: db.prepare('SELECT * FROM request_history WHERE request_id = ?'),
      daily: db.prepare(`SELECT time / ${DAY_MS} AS day, COUNT(*) AS requests, SUM(cost) AS cost FROM request_history
        WHERE account_id = ? AND time >= ? AND time < ? GROUP BY day`),
    };
    batcher.add(this);
  }

  record(row: HistoryRow): void {
    this.pending.set(row.requestId, row);
    this.batcher.schedule();
  }

  async get(requestId: string): Promise<HistoryRow | null> {
    const queued = this.pending.get(requestId);
    if (queued) return queued;
    const r = this.stmt.get.get(requestId) as Row | undefined;
    return r ? fromRow(r) : null;
  }

  async list(accountId: number, opts: HistoryQuery = {}): Promise<HistoryRow[]> {
    const limit = opts.limit ?? 20;
    const where = conditions(opts);
    const queued = [...this.pending.values()].filter((r) => r.accountId === accountId && where.test(r));
    let select = this.listBy.get(where.sql);
    if (!select) {
      select = this.db.prepare(`SELECT * FROM request_history WHERE account_id = ?${where.sql} ORDER BY time DESC, request_id DESC LIMIT ?`);
      this.listBy.set(where.sql, select);
    }
    const stored = (select.all(accountId, ...where.params, limit) as Row[]).map(fromRow);
    return [...queued, ...stored].sort(newestFirst).slice(0, limit);
  }

  async daily(accountId: number, from: number, to: number): Promise<DailyUsage[]> {
    const days = new Map<number, DailyUsage>();
    for (const r of this.stmt.daily.all(accountId, from, to) as { day: number; requests: number; cost: number }[]) {
      days.set(r.day, { day: r.day * DAY_MS, requests: r.requests, costNano: r.cost });
    }
    for (const h of this.pending.values()) {
      if (h.accountId !== accountId || h.time < from || h.time >= to) continue;
      const key = Math.floor(h.time / DAY_MS);
      const d = days.get(key) ?? { day: key * DAY_MS, requests: 0, costNano: 0 };
      d.requests++;
      d.costNano += h.costNano;
      days.set(key, d);
    }
    return [...days.values()].sort((a, b) => a.day - b.day);
  }

  write(): void {
    for (const h of this.pending.values()) {
      const u = h.usage;
      this.stmt.insert.run(h.requestId, h.time, h.accountId, h.keyId, h.route, h.model, h.listing,
        JSON.stringify(h.attempts), h.status, h.httpStatus, h.stream ? 1 : 0, u.input, u.output, u.cacheRead,
        u.cacheWrite, h.holdNano, h.costNano, Math.round(h.latencyMs), h.ttfbMs === null ? null : Math.round(h.ttfbMs), h.error);
    }
  }

  committed(): void {
    this.pending.clear();
  }
}
