// The SQLite store's request history (see ../queued-history.ts): reads of the file, and the batch's
// rows. Pruning deletes the first rows by rowid (about insertion order), so it never scans the table.
import type { Statement } from 'better-sqlite3';
import type { HistoryQuery, HistoryRow } from '../types.js';
import { DAY_MS, GROUP_COLUMN, historyConditions, historyFromRow, historyValues, pageOrder, QueuedHistory, TOTALS_SQL, type HistoryDbRow, type TotalsDbRow } from '../queued-history.js';
import type { RefusalCount } from '../refusal-counts.js';
import type { WriteBatcher } from '../write-batcher.js';
import type { Batch } from './batch.js';
import type { Db } from './open.js';

export class SqliteHistory extends QueuedHistory<Batch> {
  private readonly stmt;
  /** list() and totals() statements by their conditions (a handful of shapes). */
  private readonly listBy = new Map<string, Statement>();

  constructor(private readonly db: Db, batcher: WriteBatcher<Batch>) {
    super(batcher);
    this.stmt = {
      get: db.prepare('SELECT * FROM request_history WHERE request_id = ?'),
      daily: db.prepare(`SELECT time / ${DAY_MS} AS day, SUM(MAX(1, not_recorded)) AS requests, SUM(cost) AS cost FROM request_history
        WHERE account_id = ? AND time >= ? AND time < ? AND request_id NOT IN (SELECT value FROM json_each(?)) GROUP BY day`),
      oldest: db.prepare('SELECT time FROM request_history ORDER BY rowid LIMIT 1').pluck(),
    };
  }

  protected storedRow(requestId: string): HistoryRow | null {
    const r = this.stmt.get.get(requestId) as HistoryDbRow | undefined;
    return r ? historyFromRow(r) : null;
  }

  private prepared(sql: string): Statement {
    let stmt = this.listBy.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.listBy.set(sql, stmt);
    }
    return stmt;
  }

  /**
   * The account's rows: by the (account, time) index, or for an id search by the request id's
   * (`+account_id` keeps SQLite, which has no statistics, from preferring the account's index).
   */
  private accountIs(q: HistoryQuery): string {
    return q.idPrefix === undefined ? 'account_id = ?' : '+account_id = ?';
  }

  protected storedPage(accountId: number, q: HistoryQuery, limit: number): HistoryRow[] {
    const where = historyConditions(q, () => '?');
    const select = this.prepared(`SELECT * FROM request_history WHERE ${this.accountIs(q)}${where.sql} ORDER BY ${pageOrder(q)} LIMIT ?`);
    return (select.all(accountId, ...where.params, limit) as HistoryDbRow[]).map(historyFromRow);
  }

  protected storedTotals(accountId: number, q: HistoryQuery, leaveOut: string[], by?: keyof typeof GROUP_COLUMN): TotalsDbRow[] {
    const where = historyConditions(q, () => '?');
    const group = by ? GROUP_COLUMN[by] : undefined;
    const select = this.prepared(`SELECT ${group ? `${group} AS grp, ` : ''}${TOTALS_SQL} FROM request_history WHERE ${this.accountIs(q)}${where.sql}
      AND request_id NOT IN (SELECT value FROM json_each(?))${group ? ` GROUP BY ${group}` : ''}`);
    return select.all(accountId, ...where.params, JSON.stringify(leaveOut)) as TotalsDbRow[];
  }

  protected storedDaily(accountId: number, from: number, to: number, leaveOut: string[]) {
    return this.stmt.daily.all(accountId, from, to, JSON.stringify(leaveOut)) as { day: number; requests: number; cost: number }[];
  }

  protected oldestStored(): number | undefined {
    return this.stmt.oldest.get() as number | undefined;
  }

  protected addToBatch(batch: Batch, rows: Iterable<HistoryRow>, counts: RefusalCount[], pruneBefore: number | undefined): void {
    for (const h of rows) batch.insertHistory.push(...historyValues(h));
    for (const c of counts) batch.countRefusals.push(c.id, c.time, c.accountId, c.keyId, c.route, c.count);
    if (pruneBefore !== undefined) batch.pruneHistory.push(pruneBefore);
  }
}
