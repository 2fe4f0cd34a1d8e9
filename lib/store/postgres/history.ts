// The PostgreSQL store's request history (see ../queued-history.ts): reads of the written rows, and
// the batch's rows. Every node writes its own requests' rows; reads see every node's.
import type { HistoryQuery, HistoryRow } from '../types.js';
import { DAY_MS, GROUP_COLUMN, historyConditions, historyFromRow, pageOrder, QueuedHistory, TOTALS_SQL, type HistoryDbRow, type TotalsDbRow } from '../queued-history.js';
import type { RefusalCount } from '../refusal-counts.js';
import type { WriteBatcher } from '../write-batcher.js';
import type { PgBatch } from './batch.js';
import type { Db } from './db.js';

export class PgHistory extends QueuedHistory<PgBatch> {
  constructor(private readonly db: Db, batcher: WriteBatcher<PgBatch>) {
    super(batcher);
  }

  protected async storedRow(requestId: string): Promise<HistoryRow | null> {
    const r = await this.db.one<HistoryDbRow>('SELECT * FROM request_history WHERE request_id = $1', [requestId]);
    return r ? historyFromRow(r) : null;
  }

  protected async storedPage(accountId: number, q: HistoryQuery, limit: number): Promise<HistoryRow[]> {
    let n = 1;
    const where = historyConditions(q, () => `$${++n}`);
    const rows = await this.db.query<HistoryDbRow>(`SELECT * FROM request_history WHERE account_id = $1${where.sql}
      ORDER BY ${pageOrder(q)} LIMIT $${++n}`, [accountId, ...where.params, limit]);
    return rows.map(historyFromRow);
  }

  protected storedTotals(accountId: number, q: HistoryQuery, leaveOut: string[], by?: keyof typeof GROUP_COLUMN): Promise<TotalsDbRow[]> {
    let n = 1;
    const where = historyConditions(q, () => `$${++n}`);
    const group = by ? GROUP_COLUMN[by] : undefined;
    return this.db.query<TotalsDbRow>(`SELECT ${group ? `${group} AS grp, ` : ''}${TOTALS_SQL} FROM request_history WHERE account_id = $1${where.sql}
      AND NOT (request_id = ANY($${++n}::text[]))${group ? ` GROUP BY ${group}` : ''}`, [accountId, ...where.params, leaveOut]);
  }

  protected storedDaily(accountId: number, from: number, to: number, leaveOut: string[]) {
    return this.db.query<{ day: number; requests: number; cost: number }>(`SELECT time / ${DAY_MS} AS day,
        SUM(GREATEST(1, not_recorded))::BIGINT AS requests, SUM(cost)::BIGINT AS cost FROM request_history
      WHERE account_id = $1 AND time >= $2 AND time < $3 AND NOT (request_id = ANY($4::text[])) GROUP BY day`, [accountId, from, to, leaveOut]);
  }

  protected async oldestStored(): Promise<number | undefined> {
    return (await this.db.one<{ time: number }>('SELECT time FROM request_history ORDER BY time LIMIT 1'))?.time;
  }

  protected addToBatch(batch: PgBatch, rows: Iterable<HistoryRow>, counts: RefusalCount[], pruneBefore: number | undefined): void {
    batch.history.push(...rows);
    batch.refusals.push(...counts);
    batch.pruneBefore = pruneBefore;
  }
}
