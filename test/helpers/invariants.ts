// The money invariants of reliability.md that can be checked from the database (and, given a Store,
// against the balances it reports), on either backend: a SQLite file or a PostgreSQL database
// shared by any number of nodes (invariant 9: they hold for the whole database, whatever node
// admitted, settled or swept a hold). Returns the violations found: an empty list means all hold.
import type { Store } from '../../lib/store/types.js';
import { processRuns } from '../../lib/store/process.js';
import { NODE_DEAD_AFTER_MS } from '../../lib/store/postgres/nodes.js';
import { openSql, type Sql } from './sql.js';

export interface InvariantOptions {
  /** Every request has ended: no hold may still be open. */
  noOpenHolds?: boolean;
  /** PostgreSQL: a node silent this long is gone (default: the store's bound). */
  nodeDeadAfterMs?: number;
}

/** The UTC month ('YYYY-MM') of a row's created_at, in each dialect. */
const MONTH = {
  sqlite: `strftime('%Y-%m', created_at / 1000, 'unixepoch')`,
  postgres: `to_char(to_timestamp(created_at / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM')`,
};

export async function checkInvariants(target: Store | string, opts: InvariantOptions = {}): Promise<string[]> {
  const store = typeof target === 'string' ? undefined : target;
  if (store) await store.flush();
  const db = await openSql(store ? store.location : (target as string), { readonly: true });
  const problems: string[] = [];
  const journalBalances = new Map<number, number>();
  try {
    if (db.backend === 'sqlite') {
      const integrity = await db.value('PRAGMA integrity_check');
      if (integrity !== 'ok') problems.push(`integrity_check: ${integrity}`);
    }

    // 1 and 4: cached balance = recompute from the journal; available = credits − charges − open
    // holds (and, on PostgreSQL, every node's credit leases) ≥ 0.
    const leased = db.backend === 'postgres' ? '(SELECT COALESCE(SUM(amount), 0) FROM leases l WHERE l.account_id = a.id)' : '0';
    for (const r of await db.all(`SELECT a.id, b.balance AS cached,
        (SELECT COALESCE(SUM(amount), 0) FROM journal j WHERE j.account_id = a.id) AS journal,
        (SELECT COALESCE(SUM(amount), 0) FROM holds h WHERE h.account_id = a.id AND h.status = 'open') + ${leased} AS held
        FROM accounts a LEFT JOIN balances b ON b.account_id = a.id`)) {
      journalBalances.set(r.id, r.journal);
      if ((r.cached ?? 0) !== r.journal) problems.push(`account ${r.id}: cached balance ${r.cached} ≠ journal sum ${r.journal}`);
      if (r.journal - r.held < 0) problems.push(`account ${r.id}: available ${r.journal - r.held} < 0 (balance ${r.journal}, open holds and leases ${r.held})`);
    }

    // 2, 3 and 8: each hold has one end; a charge is within [0, hold] and matches its journal entry.
    const ownerGone = await openHoldOwnerGone(db, opts.nodeDeadAfterMs ?? NODE_DEAD_AFTER_MS);
    if (db.backend === 'postgres') {
      // A lease is credit held like a hold: its node's, until the node returns it or is swept.
      for (const l of await db.all('SELECT account_id, owner, node_id, amount, in_use FROM leases WHERE amount > 0')) {
        if (l.in_use > l.amount) problems.push(`lease of ${l.owner} on account ${l.account_id}: ${l.in_use} in use of ${l.amount}`);
        if (opts.noOpenHolds && l.in_use > 0) problems.push(`lease of ${l.owner} on account ${l.account_id}: ${l.in_use} still in use`);
        if (ownerGone(l)) problems.push(`lease of ${l.owner} on account ${l.account_id}: its node is gone`);
      }
    }
    for (const h of await db.all(`SELECT h.*, (SELECT COUNT(*) FROM journal j WHERE j.hold_id = h.id) AS entries,
        (SELECT COALESCE(SUM(-amount), 0) FROM journal j WHERE j.hold_id = h.id) AS journal_charge FROM holds h`)) {
      if (h.charged < 0 || h.charged > h.amount) problems.push(`hold ${h.id}: charged ${h.charged} outside [0, ${h.amount}]`);
      if (h.status === 'open') {
        if (h.ended_at !== null) problems.push(`hold ${h.id}: open but has an end time`);
        if (h.entries > 0) problems.push(`hold ${h.id}: open but already charged`);
        if (opts.noOpenHolds) problems.push(`hold ${h.id}: still open`);
        else if (ownerGone(h)) problems.push(`hold ${h.id}: open, and its owner (${h.owner_pid ?? h.node_id}) is gone`);
      } else {
        if (h.ended_at === null) problems.push(`hold ${h.id}: ${h.status} without an end time`);
        const want = h.status === 'settled' ? h.charged : 0;
        if (h.journal_charge !== want || h.entries !== (want > 0 ? 1 : 0)) {
          problems.push(`hold ${h.id}: ${h.status} with charged ${h.charged} but ${h.entries} journal charge(s) of ${h.journal_charge}`);
        }
      }
    }
    for (const j of await db.all(`SELECT j.id, j.amount, h.status FROM journal j LEFT JOIN holds h ON h.id = j.hold_id WHERE j.kind = 'charge'`)) {
      if (j.amount >= 0) problems.push(`journal ${j.id}: a charge of ${j.amount} (charges are negative)`);
      if (j.status !== 'settled') problems.push(`journal ${j.id}: charge on a hold that is ${j.status ?? 'missing'}`);
    }

    // 5: month-to-date charges within the key's monthly limit, and the cached spend matches.
    const month = MONTH[db.backend];
    for (const r of await db.all(`SELECT key_id, ${month} AS month, -SUM(amount) AS spent FROM journal
        WHERE kind = 'charge' GROUP BY key_id, ${month}`)) {
      const limit = await db.value('SELECT monthly_limit FROM api_keys WHERE id = ?', r.key_id);
      if (limit !== null && r.spent > limit) {
        problems.push(`key ${r.key_id}: ${r.spent} charged in ${r.month}, above its monthly limit ${limit}`);
      }
      const cached = await db.value('SELECT spent FROM key_spend WHERE key_id = ? AND month = ?', r.key_id, r.month);
      if (cached !== r.spent) problems.push(`key ${r.key_id}: cached ${r.month} spend ${cached} ≠ journal ${r.spent}`);
    }
    for (const r of await db.all(`SELECT s.key_id, s.month, s.spent FROM key_spend s WHERE NOT EXISTS (SELECT 1 FROM journal j
        WHERE j.kind = 'charge' AND j.key_id = s.key_id AND ${month} = s.month)`)) {
      if (r.spent !== 0) problems.push(`key ${r.key_id}: cached ${r.month} spend ${r.spent} without charges`);
    }

    // 6: exactly one credit per confirmed payment, of its amount; none for other payments.
    for (const p of await db.all(`SELECT p.id, p.status, p.amount, COUNT(j.id) AS credits, COALESCE(SUM(j.amount), 0) AS credited
        FROM payments p LEFT JOIN journal j ON j.payment_id = p.id GROUP BY p.id, p.status, p.amount`)) {
      const want = p.status === 'confirmed' ? 1 : 0;
      if (p.credits !== want || p.credited !== want * p.amount) {
        problems.push(`payment ${p.id} (${p.status}): ${p.credits} credit(s) totalling ${p.credited}, expected ${want} of ${p.amount}`);
      }
    }
    for (const j of await db.all(`SELECT id FROM journal WHERE kind = 'topup' AND payment_id IS NULL`)) {
      problems.push(`journal ${j.id}: a top-up without a payment`);
    }
  } finally {
    await db.close();
  }

  // 4, as the store reports it: the balances it admits against equal the journal.
  if (store) {
    for (const [id, journal] of journalBalances) {
      const { balance } = await store.ledger.balance(id);
      if (balance !== journal) problems.push(`account ${id}: the store's balance ${balance} ≠ journal sum ${journal}`);
    }
  }
  return problems;
}

/**
 * Whether an open hold's owner is gone: SQLite, its process no longer runs; PostgreSQL, its node
 * has not heartbeaten within the bound (a sweeper will release it; until then it may stay open).
 */
async function openHoldOwnerGone(db: Sql, deadAfterMs: number): Promise<(h: { owner_pid?: number; node_id?: string }) => boolean> {
  if (db.backend === 'sqlite') return (h) => !processRuns(h.owner_pid!);
  const alive = new Set((await db.all(`SELECT id FROM nodes WHERE heartbeat_at >= gateway_now_ms() - ?`, deadAfterMs)).map((n) => n.id));
  return (h) => !alive.has(h.node_id!);
}
