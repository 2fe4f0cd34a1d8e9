// String.prototype.toWellFormed: Node 20 has it; the ES2022 target does not declare it.
/// <reference lib="es2024.string" />
// The PostgreSQL store's batches (see ../write-batcher.ts for the group commit): what the parts
// queue, and the transaction that writes it. Each statement takes all its rows at once (as column
// arrays, or the rows a request adds as one JSON array of rows), so a batch costs a handful of round
// trips however many requests it carries.
// Rows that several nodes may write at once are locked in one order (accounts, keys by id), so two
// nodes' batches never deadlock.
import type { HistoryRow } from '../types.js';
import { HISTORY_COLUMNS, historyValues, PRUNE_BATCH_ROWS } from '../queued-history.js';
import type { RefusalCount } from '../refusal-counts.js';
import type { BatchExecutor } from '../write-batcher.js';
import type { Db, Tx } from './db.js';
import type { LeaseReport } from './leases.js';

/** A hold's end as the batch writes it; its charge (charged > 0) is posted with it. */
export interface HoldEnd {
  id: string;
  status: 'settled' | 'released';
  charged: number;
  endedAt: number;
  /** 'YYYY-MM' of the end: the month the charge counts in. */
  month: string;
}

/** The end of a hold admitted on a lease (see leases.ts): the hold reaches the database only now, ended. */
export interface LeasedEnd extends HoldEnd {
  accountId: number;
  keyId: number;
  requestId: string | null;
  amount: number;
  createdAt: number;
  /** The lease's owner when the hold was admitted: the charge spends from that lease, if it still exists. */
  owner: string;
}

export interface PgBatch {
  ends: HoldEnd[];
  leasedEnds: LeasedEnd[];
  leaseReports: LeaseReport[];
  history: HistoryRow[];
  refusals: RefusalCount[];
  pruneBefore?: number;
  /** key id → last use. */
  touches: Map<number, number>;
  /** Filled in by the executor: the ends that found their hold ended already (by another node's sweep, or by this batch's earlier attempt). */
  notOpen?: string[];
  /** Filled in by the executor: leased ends whose lease was gone (swept with a node taken for dead): released, not charged. */
  unleased?: string[];
}

export const newPgBatch = (): PgBatch => ({ ends: [], leasedEnds: [], leaseReports: [], history: [], refusals: [], touches: new Map() });

/**
 * End the batch's holds and post their charges, in one statement for both kinds, so that one upsert
 * per table locks every balance row in account order and every month-spend row in key order: two
 * nodes' batches never lock the same rows in crossing orders (with a statement per kind, a batch
 * ending a database-admitted hold of account 2 and a leased one of account 1 deadlocked with one
 * ending the reverse). Holds admitted through the database are ended if still open: a hold another
 * node released (it took this node for dead) is neither ended again nor charged. Holds admitted on
 * leases (see leases.ts) reach the database only now, ended; one already written (this batch's
 * earlier attempt committed) is skipped, so its charge is posted once, and one whose lease is gone
 * (swept: its node was taken for dead, and the credit may have been leased again) is written
 * released, uncharged. The leased charges are returned per lease, for SPEND_LEASES. Leased ends (one
 * per request on a serving node) come as one JSON array of rows, as the history does (INSERT_HISTORY).
 */
const END_HOLDS = `WITH d AS (SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[])
    AS d(id, status, charged, ended_at, month)),
  v AS (SELECT r->>0 AS id, (r->>1)::bigint AS account_id, (r->>2)::bigint AS key_id, r->>3 AS request_id,
      (r->>4)::bigint AS amount, r->>5 AS status, (r->>6)::bigint AS charged, (r->>7)::bigint AS created_at,
      (r->>8)::bigint AS ended_at, r->>9 AS month, r->>10 AS owner FROM jsonb_array_elements($6::jsonb) r),
  ended AS (UPDATE holds h SET status = d.status, charged = d.charged, ended_at = d.ended_at FROM d
    WHERE h.id = d.id AND h.status = 'open' RETURNING h.id, h.account_id, h.key_id, h.charged, h.ended_at, d.month),
  leased AS (SELECT v.*, EXISTS (SELECT 1 FROM leases l WHERE l.account_id = v.account_id AND l.owner = v.owner) AS live FROM v),
  written AS (INSERT INTO holds (id, account_id, key_id, request_id, amount, status, charged, created_at, ended_at, node_id)
    SELECT id, account_id, key_id, request_id, amount, CASE WHEN live THEN status ELSE 'released' END,
      CASE WHEN live THEN charged ELSE 0 END, created_at, ended_at, $7 FROM leased ORDER BY id
    ON CONFLICT (id) DO NOTHING RETURNING id, account_id, key_id, charged, ended_at),
  lease_spent AS (SELECT w.*, v.month, v.owner FROM written w JOIN v ON v.id = w.id WHERE w.charged > 0),
  spent AS (SELECT id, account_id, key_id, charged, ended_at, month FROM ended WHERE charged > 0
    UNION ALL SELECT id, account_id, key_id, charged, ended_at, month FROM lease_spent),
  charges AS (INSERT INTO journal (account_id, key_id, kind, amount, hold_id, created_at)
    SELECT account_id, key_id, 'charge', -charged, id, ended_at FROM spent ORDER BY id),
  balance AS (INSERT INTO balances AS b (account_id, balance)
    SELECT account_id, -SUM(charged) FROM spent GROUP BY account_id ORDER BY account_id
    ON CONFLICT (account_id) DO UPDATE SET balance = b.balance + excluded.balance),
  spend AS (INSERT INTO key_spend AS s (key_id, month, spent)
    SELECT key_id, month, SUM(charged) FROM spent GROUP BY key_id, month ORDER BY key_id, month
    ON CONFLICT (key_id, month) DO UPDATE SET spent = s.spent + excluded.spent)
  SELECT ARRAY(SELECT id FROM d EXCEPT SELECT id FROM ended) AS not_open,
    ARRAY(SELECT id FROM leased WHERE NOT live) AS unleased,
    COALESCE((SELECT json_agg(json_build_object('a', account_id, 'o', owner, 'c', c)) FROM
      (SELECT account_id, owner, SUM(charged)::BIGINT AS c FROM lease_spent GROUP BY account_id, owner) x), '[]') AS spent`;

/**
 * Charges spend from their lease; returns give back what a node does not need (each applied once:
 * only those newer than the lease's last seq count); in_use is what the owner's requests hold.
 * After END_HOLDS, which has locked the charged accounts' balance rows (the lock order: balances, then leases).
 */
const SPEND_LEASES = `UPDATE leases l SET amount = GREATEST(0, l.amount - v.c)
  FROM unnest($1::bigint[], $2::text[], $3::bigint[]) AS v(account_id, owner, c)
  WHERE l.account_id = v.account_id AND l.owner = v.owner`;
const REPORT_LEASES = `UPDATE leases l SET amount = GREATEST(0, l.amount - r.returned), seq = r.seq, in_use = r.in_use
  FROM (SELECT v.account_id, v.owner, COALESCE(SUM(v.returned) FILTER (WHERE v.seq > cur.seq), 0) AS returned,
      MAX(v.seq) AS seq, (array_agg(v.in_use ORDER BY v.seq DESC))[1] AS in_use
    FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[]) AS v(account_id, owner, returned, seq, in_use)
    JOIN leases cur ON cur.account_id = v.account_id AND cur.owner = v.owner
    GROUP BY v.account_id, v.owner) r
  WHERE l.account_id = r.account_id AND l.owner = r.owner AND r.seq > l.seq`;

/** The column types of HISTORY_COLUMNS, in its order. */
const HISTORY_TYPES = ['text', 'bigint', 'bigint', 'bigint', 'text', 'text', 'text', 'text', 'text', 'integer', 'boolean',
  'bigint', 'bigint', 'bigint', 'bigint', 'bigint', 'bigint', 'bigint', 'bigint', 'bigint', 'text', 'text'];
if (HISTORY_TYPES.length !== HISTORY_COLUMNS.length) throw new Error('HISTORY_TYPES must give one type per history column');

/**
 * A duplicated request id is ignored, never a failed batch (and with it every later write). The rows
 * come as one JSON array of rows (each an array in HISTORY_COLUMNS order), not as a column array per
 * column: on the event loop, JSON.stringify costs 1.1 µs a row where pg's array literals cost 3.2,
 * and the database takes as long (jsonb is parsed once; `->>` by position is direct).
 */
const INSERT_HISTORY = `INSERT INTO request_history (${HISTORY_COLUMNS.join(', ')})
  SELECT ${HISTORY_TYPES.map((t, i) => `(r->>${i})::${t}`).join(', ')} FROM jsonb_array_elements($1::jsonb) r
  ON CONFLICT (request_id) DO NOTHING`;

/** A key's refusals past the first few of a minute: one summary row per key and minute, counting them. */
const COUNT_REFUSALS = `INSERT INTO request_history AS r (request_id, time, account_id, key_id, route, attempts, status, stream,
    input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, hold, cost, latency_ms, not_recorded)
  SELECT id, time, account_id, key_id, route, '[]', 'error', false, 0, 0, 0, 0, 0, 0, 0, n
  FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::bigint[]) AS v(id, time, account_id, key_id, route, n)
  ON CONFLICT (request_id) DO UPDATE SET not_recorded = r.not_recorded + excluded.not_recorded`;

/** History past its retention, oldest first, a bounded number per batch. */
const PRUNE_HISTORY = `DELETE FROM request_history WHERE request_id IN
  (SELECT request_id FROM request_history WHERE time < $1 ORDER BY time LIMIT ${PRUNE_BATCH_ROWS})`;

/** Last use is advisory: a key another node's batch is updating right now is left to that node. */
const TOUCH_KEYS = `UPDATE api_keys k SET last_used_at = GREATEST(k.last_used_at, v.at)
  FROM unnest($1::bigint[], $2::bigint[]) AS v(id, at)
  WHERE k.id = v.id AND k.id IN (SELECT id FROM api_keys WHERE id = ANY($1::bigint[]) FOR UPDATE SKIP LOCKED)`;

/**
 * A history value as PostgreSQL takes it. A text with a NUL character or half a surrogate pair
 * (jsonb refuses both), or a number that is not an integer where the column is BIGINT, would fail
 * the whole batch, and every batch after it (the rows are queued again): a client could stop every
 * node from admitting requests with one model name. NUL and half pairs become U+FFFD (as UTF-8
 * encoding makes a half pair anyway); numbers are rounded (history holds no money that is not an
 * integer already).
 */
function historyValue(v: unknown): unknown {
  if (typeof v === 'string') return v.includes('\0') ? v.replaceAll('\0', '\uFFFD').toWellFormed() : v.toWellFormed();
  if (typeof v === 'number' && !Number.isSafeInteger(v)) {
    return Number.isFinite(v) ? Math.round(Math.min(Number.MAX_SAFE_INTEGER, Math.max(-Number.MAX_SAFE_INTEGER, v))) : 0;
  }
  return v;
}

/** The batch's history rows as INSERT_HISTORY takes them. */
function historyJson(rows: HistoryRow[]): string {
  const stream = HISTORY_COLUMNS.indexOf('stream');
  const values = rows.map(historyValues) as unknown[][];
  for (const r of values) {
    for (let i = 0; i < r.length; i++) r[i] = historyValue(r[i]);
    r[stream] = r[stream] === 1;
  }
  return JSON.stringify(values);
}

/**
 * The batch's statements, prepared once per connection: planning these (CTEs over column arrays)
 * cost the database more than running them for a batch of a few dozen rows.
 */
const prepared = {
  INSERT_HISTORY: { name: 'gw_insert_history', text: INSERT_HISTORY },
  COUNT_REFUSALS: { name: 'gw_count_refusals', text: COUNT_REFUSALS },
  PRUNE_HISTORY: { name: 'gw_prune_history', text: PRUNE_HISTORY },
  TOUCH_KEYS: { name: 'gw_touch_keys', text: TOUCH_KEYS },
  END_HOLDS: { name: 'gw_end_holds', text: END_HOLDS },
  SPEND_LEASES: { name: 'gw_spend_leases', text: SPEND_LEASES },
  REPORT_LEASES: { name: 'gw_report_leases', text: REPORT_LEASES },
};

/**
 * The batch's statements, the ends of holds last: they lock the accounts' balance rows, which every
 * reserve of those accounts waits for, so those locks are held only until the commit right after,
 * never while another statement of the batch waits (a lock on the history, a slow prune).
 */
async function write(tx: Tx, b: PgBatch, nodeId: string): Promise<void> {
  if (b.history.length) await tx.query(prepared.INSERT_HISTORY, [historyJson(b.history)]);
  if (b.refusals.length) {
    const r = b.refusals;
    await tx.query(prepared.COUNT_REFUSALS, [r.map((c) => historyValue(c.id)), r.map((c) => c.time), r.map((c) => c.accountId), r.map((c) => c.keyId),
      r.map((c) => c.route), r.map((c) => c.count)]);
  }
  if (b.pruneBefore !== undefined) await tx.query(prepared.PRUNE_HISTORY, [b.pruneBefore]);
  if (b.touches.size) await tx.query(prepared.TOUCH_KEYS, [[...b.touches.keys()], [...b.touches.values()]]);
  if (b.ends.length || b.leasedEnds.length) {
    const [d, e] = [b.ends, b.leasedEnds];
    const [r] = await tx.query<{ not_open: string[]; unleased: string[]; spent: { a: number; o: string; c: number }[] }>(prepared.END_HOLDS, [
      d.map((x) => x.id), d.map((x) => x.status), d.map((x) => x.charged), d.map((x) => x.endedAt), d.map((x) => x.month),
      JSON.stringify(e.map((x) => [x.id, x.accountId, x.keyId, x.requestId, x.amount, x.status, x.charged, x.createdAt, x.endedAt, x.month, x.owner])),
      nodeId]);
    if (d.length) b.notOpen = r.not_open;
    if (e.length) b.unleased = r.unleased;
    if (r.spent.length) await tx.query(prepared.SPEND_LEASES, [r.spent.map((x) => x.a), r.spent.map((x) => x.o), r.spent.map((x) => x.c)]);
  }
  if (b.leaseReports.length) {
    const l = b.leaseReports;
    await tx.query(prepared.REPORT_LEASES, [l.map((x) => x.accountId), l.map((x) => x.owner), l.map((x) => x.returned), l.map((x) => x.seq), l.map((x) => x.inUse)]);
  }
}

/**
 * A batch's statements take column arrays, whose lengths PostgreSQL's planner sees only in a custom
 * plan; it kept planning two of them afresh at every batch (touching keys, spending leases: 0.15 ms
 * and 0.08 ms of database CPU a batch, measured with pg_stat_statements' track_planning), for plans
 * no better than the generic ones that every batch statement runs well with.
 */
const BATCH_OPTIONS = { genericPlans: true };

/** `nodeId`: this node, on the holds it writes. */
export function pgExecutor(db: Db, nodeId: string): BatchExecutor<PgBatch> {
  return {
    run: (batch) => db.transaction((tx) => write(tx, batch, nodeId), BATCH_OPTIONS),
  };
}
