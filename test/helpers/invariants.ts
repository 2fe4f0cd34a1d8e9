// The money invariants of reliability.md that can be checked from the database (and, given a Store,
// against its in-memory balances). Returns the violations found: an empty list means all hold.
import Database from 'better-sqlite3';
import type { Store } from '../../lib/store/types.js';
import { processRuns } from '../../lib/store/process.js';

export interface InvariantOptions {
  /** Every request has ended: no hold may still be open. */
  noOpenHolds?: boolean;
}

const MONTH = `strftime('%Y-%m', created_at / 1000, 'unixepoch')`;

export async function checkInvariants(target: Store | string, opts: InvariantOptions = {}): Promise<string[]> {
  const store = typeof target === 'string' ? undefined : target;
  if (store) await store.flush();
  const db = new Database(store ? store.location : (target as string), { readonly: true, fileMustExist: true });
  const problems: string[] = [];
  const all = (sql: string) => db.prepare(sql).all() as any[];
  const journalBalances = new Map<number, number>();
  try {
    const integrity = db.pragma('integrity_check', { simple: true });
    if (integrity !== 'ok') problems.push(`integrity_check: ${integrity}`);

    // 1 and 4: cached balance = recompute from the journal; available = credits − charges − open holds ≥ 0.
    for (const r of all(`SELECT a.id, b.balance AS cached,
        (SELECT COALESCE(SUM(amount), 0) FROM journal j WHERE j.account_id = a.id) AS journal,
        (SELECT COALESCE(SUM(amount), 0) FROM holds h WHERE h.account_id = a.id AND h.status = 'open') AS held
        FROM accounts a LEFT JOIN balances b ON b.account_id = a.id`)) {
      journalBalances.set(r.id, r.journal);
      if ((r.cached ?? 0) !== r.journal) problems.push(`account ${r.id}: cached balance ${r.cached} ≠ journal sum ${r.journal}`);
      if (r.journal - r.held < 0) problems.push(`account ${r.id}: available ${r.journal - r.held} < 0 (balance ${r.journal}, open holds ${r.held})`);
    }

    // 2, 3 and 8: each hold has one end; a charge is within [0, hold] and matches its journal entry.
    for (const h of all(`SELECT h.*, (SELECT COUNT(*) FROM journal j WHERE j.hold_id = h.id) AS entries,
        (SELECT COALESCE(SUM(-amount), 0) FROM journal j WHERE j.hold_id = h.id) AS journal_charge FROM holds h`)) {
      if (h.charged < 0 || h.charged > h.amount) problems.push(`hold ${h.id}: charged ${h.charged} outside [0, ${h.amount}]`);
      if (h.status === 'open') {
        if (h.ended_at !== null) problems.push(`hold ${h.id}: open but has an end time`);
        if (h.entries > 0) problems.push(`hold ${h.id}: open but already charged`);
        if (opts.noOpenHolds) problems.push(`hold ${h.id}: still open`);
        else if (!processRuns(h.owner_pid)) problems.push(`hold ${h.id}: open, and its process ${h.owner_pid} is gone`);
      } else {
        if (h.ended_at === null) problems.push(`hold ${h.id}: ${h.status} without an end time`);
        const want = h.status === 'settled' ? h.charged : 0;
        if (h.journal_charge !== want || h.entries !== (want > 0 ? 1 : 0)) {
          problems.push(`hold ${h.id}: ${h.status} with charged ${h.charged} but ${h.entries} journal charge(s) of ${h.journal_charge}`);
        }
      }
    }
    for (const j of all(`SELECT j.id, j.amount, h.status FROM journal j LEFT JOIN holds h ON h.id = j.hold_id WHERE j.kind = 'charge'`)) {
      if (j.amount >= 0) problems.push(`journal ${j.id}: a charge of ${j.amount} (charges are negative)`);
      if (j.status !== 'settled') problems.push(`journal ${j.id}: charge on a hold that is ${j.status ?? 'missing'}`);
    }

    // 5: month-to-date charges within the key's monthly limit, and the cached spend matches.
    for (const r of all(`SELECT key_id, ${MONTH} AS month, -SUM(amount) AS spent FROM journal
        WHERE kind = 'charge' GROUP BY key_id, month`)) {
      const key = db.prepare('SELECT monthly_limit FROM api_keys WHERE id = ?').get(r.key_id) as { monthly_limit: number | null };
      if (key.monthly_limit !== null && r.spent > key.monthly_limit) {
        problems.push(`key ${r.key_id}: ${r.spent} charged in ${r.month}, above its monthly limit ${key.monthly_limit}`);
      }
      const cached = db.prepare('SELECT spent FROM key_spend WHERE key_id = ? AND month = ?').pluck().get(r.key_id, r.month);
      if (cached !== r.spent) problems.push(`key ${r.key_id}: cached ${r.month} spend ${cached} ≠ journal ${r.spent}`);
    }
    for (const r of all(`SELECT s.key_id, s.month, s.spent FROM key_spend s WHERE NOT EXISTS (SELECT 1 FROM journal j
        WHERE j.kind = 'charge' AND j.key_id = s.key_id AND ${MONTH} = s.month)`)) {
      if (r.spent !== 0) problems.push(`key ${r.key_id}: cached ${r.month} spend ${r.spent} without charges`);
    }

    // 6: exactly one credit per confirmed payment, of its amount; none for other payments.
    for (const p of all(`SELECT p.id, p.status, p.amount, COUNT(j.id) AS credits, COALESCE(SUM(j.amount), 0) AS credited
        FROM payments p LEFT JOIN journal j ON j.payment_id = p.id GROUP BY p.id`)) {
      const want = p.status === 'confirmed' ? 1 : 0;
      if (p.credits !== want || p.credited !== want * p.amount) {
        problems.push(`payment ${p.id} (${p.status}): ${p.credits} credit(s) totalling ${p.credited}, expected ${want} of ${p.amount}`);
      }
    }
    for (const j of all(`SELECT id FROM journal WHERE kind = 'topup' AND payment_id IS NULL`)) {
      problems.push(`journal ${j.id}: a top-up without a payment`);
    }
  } finally {
    db.close();
  }

  // 4, in memory: the balances the server admits against equal the journal.
  if (store) {
    for (const [id, journal] of journalBalances) {
      const { balance } = await store.ledger.balance(id);
      if (balance !== journal) problems.push(`account ${id}: in-memory balance ${balance} ≠ journal sum ${journal}`);
    }
  }
  return problems;
}
