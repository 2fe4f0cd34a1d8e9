// Request history: one row per authenticated request, queued and written with the next batch.
import type { History, HistoryRow } from '../types.js';
import type { BatchPart, WriteBatcher } from './batch.js';
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

  constructor(db: Db, private readonly batcher: WriteBatcher) {
    this.stmt = {
      // OR IGNORE: a duplicated request id must never fail the batch (and with it every later write).
      insert: db.prepare(`INSERT OR IGNORE INTO request_history (request_id, time, account_id, key_id, route, model,
        listing, attempts, status, http_status, stream, input_tokens, output_tokens, cache_read_tokens,
        cache_write_tokens, hold, cost, latency_ms, ttfb_ms, error)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      get: db.prepare('SELECT * FROM request_history WHERE request_id = ?'),
      list: db.prepare('SELECT * FROM request_history WHERE account_id = ? ORDER BY time DESC, rowid DESC LIMIT ?'),
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

  async list(accountId: number, opts: { limit?: number } = {}): Promise<HistoryRow[]> {
    const queued = [...this.pending.values()].filter((r) => r.accountId === accountId).reverse();
    const limit = opts.limit ?? 20;
    const stored = (this.stmt.list.all(accountId, limit) as Row[]).map(fromRow);
    return [...queued, ...stored].slice(0, limit);
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
