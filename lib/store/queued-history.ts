// Request history, whatever the database: one row per authenticated request, queued and written
// with the next batch; refusals past a key's first few in a minute are counted in a summary row
// instead (RefusalCounts). Reads merge the rows not yet confirmed written, and leave out their
// stored copies (a batch can be committed before its confirmation arrives), so nothing counts
// twice. Rows older than the retention are deleted in the background, a bounded number per batch.
// A backend supplies the reads of stored rows and how queued rows go into its batch.
import { andThen, type MaybePromise } from '../maybe-promise.js';
import { jsonHundredths, jsonNumber, jsonString } from '../json-string.js';
import type { Attempt } from '../context.js';
import type { DailyUsage, History, HistoryQuery, HistoryRow, HistoryTotals } from './types.js';
import { notRecordedMessage, RefusalCounts, type RefusalCount } from './refusal-counts.js';
import { QueuedRows, type BatchPart, type WriteBatcher } from './write-batcher.js';

export const DAY_MS = 86_400_000;
/** How often the oldest row is checked against the retention (one indexed read). */
export const PRUNE_CHECK_MS = 1000;
/** Rows one batch deletes at most when pruning, oldest first. */
export const PRUNE_BATCH_ROWS = 2000;

/** A request_history row as both databases return it (SQLite's stream is 0/1, PostgreSQL's a boolean). */
export interface HistoryDbRow {
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
  stream: number | boolean;
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

export const historyFromRow = (r: HistoryDbRow): HistoryRow => ({
  requestId: r.request_id, time: r.time, accountId: r.account_id, keyId: r.key_id, route: r.route,
  model: r.model, requestedModel: r.requested_model, listing: r.listing, attempts: JSON.parse(r.attempts), status: r.status,
  httpStatus: r.http_status, stream: r.stream === 1 || r.stream === true,
  usage: { input: r.input_tokens, output: r.output_tokens, cacheRead: r.cache_read_tokens, cacheWrite: r.cache_write_tokens, cacheWrite1h: r.cache_write_1h_tokens },
  holdNano: r.hold, costNano: r.cost, latencyMs: r.latency_ms, ttfbMs: r.ttfb_ms,
  ...(r.not_recorded > 0 ? { error: notRecordedMessage(r.not_recorded), notRecorded: r.not_recorded } : { error: r.error }),
});

/**
 * A row's values in the order of HISTORY_COLUMNS (stream as 0/1), times rounded to whole
 * milliseconds: the order both backends insert in.
 */
export function historyValues(h: HistoryRow): (string | number | null)[] {
  const u = h.usage;
  return [h.requestId, h.time, h.accountId, h.keyId, h.route, h.model, h.listing, attemptsJson(h.attempts), h.status,
    h.httpStatus, h.stream ? 1 : 0, u.input, u.output, u.cacheRead, u.cacheWrite, u.cacheWrite1h, h.holdNano, h.costNano,
    Math.round(h.latencyMs), h.ttfbMs === null ? null : Math.round(h.ttfbMs), h.error, h.requestedModel ?? null];
}

/**
 * JSON.stringify(attempts) with durations to a hundredth of a millisecond (as the request log
 * writes them), written out: JSON.stringify took about 7,300 instructions a row (callgrind, the
 * main thread), for a one-attempt array.
 */
export function attemptsJson(attempts: Attempt[]): string {
  let out = '[';
  for (let i = 0; i < attempts.length; i++) {
    const a = attempts[i];
    out += `${i ? ',' : ''}{"listing":${jsonString(a.listing)},"outcome":${jsonString(a.outcome)}` +
      (a.status === undefined ? '' : `,"status":${jsonNumber(a.status)}`) +
      (a.reason === undefined ? '' : `,"reason":${jsonString(a.reason)}`) +
      `,"durationMs":${jsonHundredths(a.durationMs)}}`;
  }
  return out + ']';
}

export const HISTORY_COLUMNS = ['request_id', 'time', 'account_id', 'key_id', 'route', 'model', 'listing', 'attempts', 'status',
  'http_status', 'stream', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cache_write_1h_tokens',
  'hold', 'cost', 'latency_ms', 'ttfb_ms', 'error', 'requested_model'] as const;

/**
 * The query as SQL conditions on an account's rows (each value's placeholder from `placeholder`,
 * called in the order of `params`), and as a test for rows not yet written.
 */
export function historyConditions(q: HistoryQuery, placeholder: () => string): { sql: string; params: (string | number)[]; test: (h: HistoryRow) => boolean } {
  const sql: string[] = [];
  const params: (string | number)[] = [];
  const tests: ((h: HistoryRow) => boolean)[] = [];
  const where = (condition: (p: () => string) => string, values: (string | number)[], test: (h: HistoryRow) => boolean) => {
    sql.push(condition(placeholder));
    params.push(...values);
    tests.push(test);
  };
  if (q.model !== undefined) where((p) => `model = ${p()}`, [q.model], (h) => h.model === q.model);
  if (q.status !== undefined) where((p) => `status = ${p()}`, [q.status], (h) => h.status === q.status);
  if (q.keyId !== undefined) where((p) => `key_id = ${p()}`, [q.keyId], (h) => h.keyId === q.keyId);
  if (q.route !== undefined) where((p) => `route = ${p()}`, [q.route], (h) => h.route === q.route);
  if (q.idPrefix !== undefined) {
    // A range both databases answer from the request id's index (ids are letters and digits, which
    // sort alike in every collation), then the exact prefix.
    const prefix = q.idPrefix;
    where((p) => `request_id >= ${p()} AND request_id <= ${p()} AND substr(request_id, 1, ${p()}) = ${p()}`,
      [prefix, prefix + 'Z'.repeat(Math.max(1, ID_LENGTH - prefix.length)), prefix.length, prefix], (h) => h.requestId.startsWith(prefix));
  }
  if (q.from !== undefined) where((p) => `time >= ${p()}`, [q.from], (h) => h.time >= q.from!);
  if (q.to !== undefined) where((p) => `time < ${p()}`, [q.to], (h) => h.time < q.to!);
  const after = q.after;
  if (after) {
    where((p) => `(time < ${p()} OR (time = ${p()} AND request_id < ${p()}))`, [after.time, after.time, after.requestId],
      (h) => newestFirst(h, after) > 0);
  }
  const before = q.before;
  if (before) {
    where((p) => `(time > ${p()} OR (time = ${p()} AND request_id > ${p()}))`, [before.time, before.time, before.requestId],
      (h) => newestFirst(h, before) < 0);
  }
  return { sql: sql.map((c) => ` AND ${c}`).join(''), params, test: (h) => tests.every((t) => t(h)) };
}

/** A request id's length: `req_` and a ULID. */
const ID_LENGTH = 30;

/** The SQL order of a page: newest first, or oldest first when paging back (`before`). */
export const pageOrder = (q: HistoryQuery): string => (q.before ? 'time ASC, request_id ASC' : 'time DESC, request_id DESC');

/** The sums of a totals query, as both databases name them (`grp`: the group's value, when grouped). */
export interface TotalsDbRow { grp?: string | number | null; rows: number; requests: number; input: number; output: number; cost: number }

/** The column a totalsBy groups by. */
export const GROUP_COLUMN = { model: 'model', keyId: 'key_id' } as const;

/** The select list of a totals query (BIGINT: PostgreSQL's sums would otherwise be NUMERIC). */
export const TOTALS_SQL = `COUNT(*) AS rows, CAST(SUM(CASE WHEN not_recorded > 0 THEN not_recorded ELSE 1 END) AS BIGINT) AS requests,
  CAST(SUM(input_tokens + cache_read_tokens + cache_write_tokens) AS BIGINT) AS input, CAST(SUM(output_tokens) AS BIGINT) AS output,
  CAST(SUM(cost) AS BIGINT) AS cost`;

/** List order: newest arrival first, then the larger request id. */
const newestFirst = (a: Pick<HistoryRow, 'time' | 'requestId'>, b: Pick<HistoryRow, 'time' | 'requestId'>) =>
  b.time - a.time || (a.requestId < b.requestId ? 1 : a.requestId > b.requestId ? -1 : 0);

const emptyTotals = (): HistoryTotals => ({ rows: 0, requests: 0, inputTokens: 0, outputTokens: 0, costNano: 0 });

/** Requests a row stands for: a summary row stands for the refusals it counts. */
const requestsOf = (h: HistoryRow) => h.notRecorded ?? 1;

export abstract class QueuedHistory<B> implements History, BatchPart<B> {
  /** Rows not yet confirmed written, by request id (readable before they reach the database). */
  protected readonly rows = new QueuedRows<string, HistoryRow>();
  protected readonly refusals = new RefusalCounts();
  /** Rows that arrived before this are past the retention (set by the prune check, taken by the next batch). */
  private pruneBefore: number | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;

  constructor(protected readonly batcher: WriteBatcher<B>) {
    batcher.add(this);
  }

  /** A written row, or null. */
  protected abstract storedRow(requestId: string): MaybePromise<HistoryRow | null>;
  /** Up to `limit` written rows of the account matching `q`, in list order. */
  protected abstract storedPage(accountId: number, q: HistoryQuery, limit: number): MaybePromise<HistoryRow[]>;
  /** Written requests and cost per UTC day (day = time / DAY_MS), leaving out the rows `leaveOut` names. */
  protected abstract storedDaily(accountId: number, from: number, to: number, leaveOut: string[]): MaybePromise<{ day: number; requests: number; cost: number }[]>;
  /** Sums over the written rows of the account matching `q`, leaving out the rows `leaveOut` names; one row, or one per group. */
  protected abstract storedTotals(accountId: number, q: HistoryQuery, leaveOut: string[], by?: keyof typeof GROUP_COLUMN): MaybePromise<TotalsDbRow[]>;
  /** The arrival time of the oldest written row (about the first written), or undefined. */
  protected abstract oldestStored(): MaybePromise<number | undefined>;
  /** Put these rows, summary counts and prune cutoff into the batch. */
  protected abstract addToBatch(batch: B, rows: Iterable<HistoryRow>, counts: RefusalCount[], pruneBefore: number | undefined): void;

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
   * deletes up to PRUNE_BATCH_ROWS of the oldest rows, so the writer is never stalled by one large
   * delete. Stopped by stopPruning. Resolves when the first check is done (it never rejects).
   */
  startPruning(retentionMs: number, clock: () => number): Promise<void> {
    this.stopPruning();
    const check = () => Promise.resolve(this.checkRetention(retentionMs, clock)).catch(() => {}); // retried at the next check
    this.pruneTimer = setInterval(check, PRUNE_CHECK_MS);
    this.pruneTimer.unref();
    return check();
  }

  /** The oldest row is past the retention: the next batch prunes. */
  checkRetention(retentionMs: number, clock: () => number): MaybePromise<void> {
    const cutoff = clock() - retentionMs;
    const decide = (oldest: number | undefined) => {
      if (oldest === undefined || oldest >= cutoff) return;
      this.pruneBefore = cutoff;
      this.batcher.schedule();
    };
    return andThen(this.oldestStored(), decide);
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
    return queued ?? this.storedRow(requestId);
  }

  async list(accountId: number, opts: HistoryQuery = {}): Promise<HistoryRow[]> {
    const limit = opts.limit ?? 20;
    const test = historyConditions(opts, () => '?').test;
    const unconfirmed = this.unconfirmed();
    const queued = unconfirmed.filter((r) => r.accountId === accountId && test(r));
    const queuedIds = new Set(unconfirmed.map((r) => r.requestId));
    // Enough stored rows to fill the page even if some are copies of unconfirmed ones.
    const stored = (await this.storedPage(accountId, opts, limit + queuedIds.size)).filter((r) => !queuedIds.has(r.requestId));
    if (!opts.before) return [...queued, ...stored].sort(newestFirst).slice(0, limit);
    // Paging back: the rows nearest the cursor, that is the oldest of the newer ones.
    return [...queued, ...stored].sort((a, b) => newestFirst(b, a)).slice(0, limit).reverse();
  }

  async totals(accountId: number, opts: HistoryQuery = {}): Promise<HistoryTotals> {
    return (await this.summed(accountId, opts)).get(undefined) ?? emptyTotals();
  }

  async totalsBy<K extends 'model' | 'keyId'>(accountId: number, by: K, opts: HistoryQuery = {}): Promise<(HistoryTotals & { group: HistoryRow[K] })[]> {
    const groups = await this.summed(accountId, opts, by);
    return [...groups].map(([group, t]) => ({ group: group as HistoryRow[K], ...t })).sort((a, b) => b.costNano - a.costNano || b.rows - a.rows);
  }

  /** Stored sums and the unconfirmed rows' added up, by group (undefined when not grouped). */
  private async summed(accountId: number, opts: HistoryQuery, by?: keyof typeof GROUP_COLUMN): Promise<Map<unknown, HistoryTotals>> {
    const test = historyConditions(opts, () => '?').test;
    const unconfirmed = this.unconfirmed();
    const out = new Map<unknown, HistoryTotals>();
    for (const s of await this.storedTotals(accountId, opts, unconfirmed.map((h) => h.requestId), by)) {
      if (!s.rows) continue; // no rows: SQL's one row of nulls
      out.set(by ? s.grp : undefined, { rows: s.rows, requests: s.requests, inputTokens: s.input, outputTokens: s.output, costNano: s.cost });
    }
    for (const h of unconfirmed) {
      if (h.accountId !== accountId || !test(h)) continue;
      const group = by ? h[by] : undefined;
      const t = out.get(group) ?? emptyTotals();
      t.rows += 1;
      t.requests += requestsOf(h);
      t.inputTokens += h.usage.input + h.usage.cacheRead + h.usage.cacheWrite;
      t.outputTokens += h.usage.output;
      t.costNano += h.costNano;
      out.set(group, t);
    }
    return out;
  }

  async daily(accountId: number, from: number, to: number): Promise<DailyUsage[]> {
    const days = new Map<number, DailyUsage>();
    const unconfirmed = this.unconfirmed();
    for (const r of await this.storedDaily(accountId, from, to, unconfirmed.map((h) => h.requestId))) {
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

  take(batch: B): void {
    const counts: RefusalCount[] = [];
    this.refusals.take((c) => counts.push(c));
    this.addToBatch(batch, this.rows.take().values(), counts, this.pruneBefore);
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
