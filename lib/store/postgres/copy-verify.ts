// Checking a copy before it commits (`gateway db copy`): every table's row count and money sum
// agree on both sides, and every account's balance, recomputed from the journal on each side,
// equals the other side's and each side's stored balance. Accounts are compared in pages of ids
// (the SQLite side streamed in id order, the PostgreSQL side asked for the same id range), so the
// check's memory does not grow with the number of accounts.
import type Database from 'better-sqlite3';
import type pg from 'pg';
import { formatUsd } from '../money.js';
import type { CopiedTable } from './copy-tables.js';

export interface TableFigures {
  name: string;
  rows: number;
  /** The table's money column and its sum (nano-USD), where it has one. */
  sumOf?: string;
  sum?: string;
}

export interface Verification {
  tables: TableFigures[];
  accountsVerified: number;
  /** The sum of every account's balance, nano-USD (a decimal string: exact whatever its size). */
  totalBalanceNano: string;
  /** What disagrees (at most MAX_LISTED, then a count of the rest); empty when the copy is exact. */
  mismatches: string[];
}

const MAX_LISTED = 20;
const ACCOUNT_PAGE = 1000;

/** One account's balance: stored (balances row) and recomputed (sum of its journal); null = no row / no entry. */
type Balance = { stored: bigint | null; journal: bigint | null };

const SOURCE_BALANCES = `SELECT ids.id, (SELECT balance FROM balances WHERE account_id = ids.id),
    (SELECT SUM(amount) FROM journal WHERE account_id = ids.id)
  FROM (SELECT id FROM accounts UNION SELECT account_id FROM balances UNION SELECT account_id FROM journal) ids ORDER BY ids.id`;

/** The accounts in (lo, hi] (hi null: all above lo), as SOURCE_BALANCES gives them. */
const TARGET_BALANCES = `SELECT ids.id::text AS id, (SELECT balance FROM balances WHERE account_id = ids.id)::text AS stored,
    (SELECT SUM(amount) FROM journal WHERE account_id = ids.id)::text AS journal
  FROM (SELECT id FROM accounts WHERE id > $1 AND ($2::bigint IS NULL OR id <= $2)
    UNION SELECT account_id FROM balances WHERE account_id > $1 AND ($2::bigint IS NULL OR account_id <= $2)
    UNION SELECT account_id FROM journal WHERE account_id > $1 AND ($2::bigint IS NULL OR account_id <= $2)) ids ORDER BY ids.id`;

/** `source` must have safe integers on (BigInt) and be inside the read transaction the copy read from. */
export async function verifyCopy(source: Database.Database, target: pg.ClientBase, tables: CopiedTable[]): Promise<Verification> {
  const mismatches = new Mismatches();
  const figures: TableFigures[] = [];
  for (const t of tables) {
    const aggregate = `SELECT COUNT(*), ${t.sum ? `SUM(${t.sum})` : 'NULL'} FROM ${t.name}`;
    const [srcRows, srcSum] = source.prepare(aggregate).raw(true).get() as [bigint, bigint | null];
    const [dstRows, dstSum] = (await target.query({ text: aggregate.replace('COUNT(*)', 'COUNT(*)::text').replace(/SUM\((\w+)\)/, 'SUM($1)::text'), rowMode: 'array' })).rows[0] as [string, string | null];
    if (String(srcRows) !== dstRows) mismatches.add(`${t.name}: ${srcRows} rows in SQLite, ${dstRows} in PostgreSQL`);
    if (t.sum && String(srcSum ?? 0) !== String(dstSum ?? 0)) {
      mismatches.add(`${t.name}: the sum of ${t.sum} is ${srcSum ?? 0} in SQLite, ${dstSum ?? 0} in PostgreSQL`);
    }
    figures.push({ name: t.name, rows: Number(srcRows), ...(t.sum ? { sumOf: t.sum, sum: String(srcSum ?? 0) } : {}) });
  }

  let accounts = 0;
  let total = 0n;
  let page: [bigint, Balance][] = [];
  let lo = -1n;
  const comparePage = async (hi: bigint | null) => {
    const rows = (await target.query<{ id: string; stored: string | null; journal: string | null }>(TARGET_BALANCES, [lo.toString(), hi?.toString() ?? null])).rows;
    const copied = new Map(rows.map((r) => [r.id, { stored: big(r.stored), journal: big(r.journal) }]));
    for (const [id, src] of page) {
      const dst = copied.get(id.toString());
      copied.delete(id.toString());
      accounts++;
      total += src.journal ?? 0n;
      checkAccount(mismatches, id, src, dst);
    }
    for (const id of copied.keys()) mismatches.add(`account ${id}: in PostgreSQL but not in SQLite`);
    if (hi !== null) lo = hi;
    page = [];
  };
  for (const [id, stored, journal] of source.prepare(SOURCE_BALANCES).raw(true).iterate() as Iterable<[bigint, bigint | null, bigint | null]>) {
    page.push([id, { stored, journal }]);
    if (page.length === ACCOUNT_PAGE) await comparePage(id);
  }
  await comparePage(null);
  return { tables: figures, accountsVerified: accounts, totalBalanceNano: total.toString(), mismatches: mismatches.list() };
}

function checkAccount(m: Mismatches, id: bigint, src: Balance, dst: Balance | undefined): void {
  if (!dst) return m.add(`account ${id}: in SQLite but not in PostgreSQL`);
  const [srcStored, srcJournal, dstStored, dstJournal] = [src.stored, src.journal, dst.stored, dst.journal].map((v) => v ?? 0n);
  if (srcStored !== srcJournal) m.add(`account ${id}: SQLite stores a balance of ${usd(srcStored)} but its journal sums to ${usd(srcJournal)}`);
  if (dstStored !== dstJournal) m.add(`account ${id}: PostgreSQL stores a balance of ${usd(dstStored)} but its journal sums to ${usd(dstJournal)}`);
  if (srcJournal !== dstJournal) m.add(`account ${id}: its journal sums to ${usd(srcJournal)} in SQLite, ${usd(dstJournal)} in PostgreSQL`);
  if (srcStored !== dstStored) m.add(`account ${id}: stored balance ${usd(srcStored)} in SQLite, ${usd(dstStored)} in PostgreSQL`);
}

class Mismatches {
  private readonly listed: string[] = [];
  private more = 0;
  add(message: string): void {
    if (this.listed.length < MAX_LISTED) this.listed.push(message);
    else this.more++;
  }
  list(): string[] {
    return this.more ? [...this.listed, `… and ${this.more} more`] : this.listed;
  }
}

const big = (v: string | null) => (v === null ? null : BigInt(v));

/** Dollars where exact, else the nano-USD figure. */
function usd(nano: bigint): string {
  const n = Number(nano);
  return Number.isSafeInteger(n) ? formatUsd(n) : `${nano} nano-USD`;
}
