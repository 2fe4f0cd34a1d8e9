// The credit ledger. Balances, open holds and each key's month-to-date spend live in memory and
// are authoritative for admission: reserve() checks and counts a hold in one synchronous step, so
// concurrent requests in this process can never overspend. Holds and charges reach the database
// with the next batch; credits (grants, top-ups) are written at once with an fsync. Rows other
// processes add to the journal are read in whenever SQLite reports a foreign commit (our own writer
// thread's batches are foreign commits too: their charges, counted when queued, are told apart by
// their hold id, which starts with this store's prefix).
import type {
  BalanceSummary, Hold, Ledger, LedgerEntry, ReserveRequest, ReserveResult, Statement,
} from '../types.js';
import { StoreError } from '../types.js';
import { DAY_MS } from '../queued-history.js';
import { toDailyCharges, toLedgerEntry, type CreditDraft, type DailyChargeRow, type JournalRow } from '../rows.js';
import { processRuns } from '../process.js';
import type { BatchPart, WriteBatcher } from '../write-batcher.js';
import type { Batch } from './batch.js';
import type { ChangeWatcher } from './changes.js';
import type { MonthClock } from '../month.js';
import { durableTransaction, type Db } from './open.js';

interface AccountMoney {
  balance: number;
  held: number;
}

interface KeyMoney {
  month: string;
  spent: number;
  held: number;
}

interface HoldState extends Hold {
  requestId: string | null;
  status: 'open' | 'settled' | 'released';
  charged: number;
  endedAt: number | null;
  /** The row exists in the database (inserted by an earlier batch). */
  persisted: boolean;
  /** In the queue for the next batch. */
  queued: boolean;
}

interface PendingCharge {
  accountId: number;
  keyId: number;
  amount: number;
  holdId: string;
  createdAt: number;
  month: string;
}

/** What the ledger reads back of a journal row to count it. */
type CountedRow = Omit<JournalRow, 'hold_id' | 'note'>;

/** Identifies this process on the hold rows it owns (see releaseAbandonedHolds). */
export interface HoldOwner {
  pid: number;
  token: string;
}

export class SqliteLedger implements Ledger, BatchPart<Batch> {
  private readonly accounts = new Map<number, AccountMoney>();
  private readonly keys = new Map<number, KeyMoney>();
  private readonly open = new Map<string, HoldState>();
  /** Holds whose row is to be written (each once: see `queue`). */
  private dirtyHolds: HoldState[] = [];
  private charges: PendingCharge[] = [];
  /** Taken by the batch in flight: queued again if it fails. */
  private inFlight: { holds: HoldState[]; charges: PendingCharge[] } = { holds: [], charges: [] };
  /** Every journal row with an id up to this one is reflected in memory. */
  private lastJournalId = 0;
  private holdSeq = 0;
  /** Hold ids: this process's start time and owner token, then a counter (see holdId). */
  private readonly holdIdPrefix: string;
  private closed = false;

  private readonly stmt;
  private readonly readJournalSince: () => { rows: CountedRow[]; last: number | null };

  constructor(
    private readonly db: Db,
    private readonly batcher: WriteBatcher<Batch>,
    private readonly changes: ChangeWatcher,
    private readonly months: MonthClock,
    private readonly owner: HoldOwner,
  ) {
    this.stmt = {
      // Other processes' rows after `id`: our own charges (their hold id has our prefix) are already
      // counted. A range scan of the journal alone: after a foreign commit our page cache is cold.
      foreignSince: db.prepare(`SELECT id, account_id, key_id, kind, amount, created_at FROM journal
        WHERE id > ? AND substr(hold_id, 1, ?) IS NOT ? ORDER BY id`),
      lastJournalId: db.prepare('SELECT MAX(id) FROM journal').pluck(),
      insertCredit: db.prepare(`INSERT INTO journal (account_id, kind, amount, payment_id, note, created_at)
        VALUES (?, ?, ?, ?, ?, ?)`),
      addBalance: db.prepare(`INSERT INTO balances (account_id, balance) VALUES (?, ?)
        ON CONFLICT (account_id) DO UPDATE SET balance = balance + excluded.balance`),
      entries: db.prepare('SELECT * FROM journal WHERE account_id = ? ORDER BY id DESC LIMIT ?'),
      credits: db.prepare(`SELECT * FROM journal WHERE account_id = ? AND kind <> 'charge' ORDER BY id DESC`),
      chargesByDay: db.prepare(`SELECT created_at / ${DAY_MS} AS day, COUNT(*) AS count, SUM(amount) AS amount FROM journal
        WHERE account_id = ? AND kind = 'charge' GROUP BY day ORDER BY day DESC`),
      accountExists: db.prepare('SELECT 1 FROM accounts WHERE id = ?').pluck(),
      // Through the index of open holds (requests in flight): few rows.
      heldByOthers: db.prepare(`SELECT COALESCE(SUM(amount), 0) FROM holds
        WHERE status = 'open' AND account_id = ? AND owner_token <> ?`).pluck(),
      heldByOthersPerKey: db.prepare(`SELECT key_id, SUM(amount) AS held FROM holds
        WHERE status = 'open' AND account_id = ? AND owner_token <> ? GROUP BY key_id`),
    };
    this.holdIdPrefix = `${months.now().toString(36)}-${owner.token.slice(0, 8)}-`;
    // Called by the change watcher inside one read transaction: the rows and the last id agree.
    this.readJournalSince = () => ({
      rows: this.stmt.foreignSince.all(this.lastJournalId, this.holdIdPrefix.length, this.holdIdPrefix) as CountedRow[],
      last: this.stmt.lastJournalId.get() as number | null,
    });
    this.load();
    changes.setForeignHandler(() => this.readForeignEntries());
    batcher.add(this);
  }

  /** One consistent snapshot of the cached aggregates (not the whole journal). */
  private load(): void {
    const month = this.months.month();
    this.db.transaction(() => {
      for (const r of this.db.prepare('SELECT account_id, balance FROM balances').all() as any[]) {
        this.accounts.set(r.account_id, { balance: r.balance, held: 0 });
      }
      for (const r of this.db.prepare('SELECT key_id, spent FROM key_spend WHERE month = ?').all(month) as any[]) {
        this.keys.set(r.key_id, { month, spent: r.spent, held: 0 });
      }
      this.lastJournalId = (this.stmt.lastJournalId.get() as number | null) ?? 0;
    })();
  }

  private account(id: number): AccountMoney {
    let a = this.accounts.get(id);
    if (!a) this.accounts.set(id, (a = { balance: 0, held: 0 }));
    return a;
  }

  /** The key's counters, rolled over to `month` (spend restarts; open holds carry on). */
  private key(id: number, month = this.months.month()): KeyMoney {
    let k = this.keys.get(id);
    if (!k) this.keys.set(id, (k = { month, spent: 0, held: 0 }));
    else if (k.month !== month) {
      k.month = month;
      k.spent = 0;
    }
    return k;
  }

  private readForeignEntries(): void {
    const { rows, last } = this.readJournalSince();
    this.lastJournalId = last ?? this.lastJournalId;
    for (const r of rows) {
      this.account(r.account_id).balance += r.amount;
      if (r.kind === 'charge' && r.key_id !== null) {
        const month = this.months.month(r.created_at);
        if (month === this.months.month()) this.key(r.key_id, month).spent -= r.amount;
      }
    }
  }

  async balance(accountId: number): Promise<BalanceSummary> {
    const a = this.account(accountId);
    // This process's holds from memory; those of other live processes on the file (a serving
    // gateway, seen from the command line) from their rows, as far as their batches wrote them.
    // Holds of dead processes were released when this store opened.
    const others = this.db.open ? (this.stmt.heldByOthers.get(accountId, this.owner.token) as number) : 0;
    const held = a.held + others;
    return { balance: a.balance, held, available: Math.max(0, a.balance - held) };
  }

  async monthToDate(keyId: number): Promise<number> {
    return this.key(keyId).spent;
  }

  async heldByKey(accountId: number): Promise<Map<number, number>> {
    // As balance(): this process's holds from memory, those of other live processes from their rows.
    const out = new Map<number, number>();
    const add = (keyId: number, amount: number) => out.set(keyId, (out.get(keyId) ?? 0) + amount);
    for (const h of this.open.values()) if (h.accountId === accountId) add(h.keyId, h.amount);
    if (this.db.open) {
      for (const r of this.stmt.heldByOthersPerKey.all(accountId, this.owner.token) as { key_id: number; held: number }[]) add(r.key_id, r.held);
    }
    return out;
  }

  openHolds(): { count: number; nano: number } {
    let nano = 0;
    for (const h of this.open.values()) nano += h.amount;
    return { count: this.open.size, nano };
  }

  reserve(req: ReserveRequest): ReserveResult {
    if (this.closed) throw new StoreError('invalid', 'store is closed');
    const { amount } = req;
    if (!Number.isSafeInteger(amount) || amount < 0) throw new StoreError('invalid', `bad hold amount ${amount}`);
    if (this.batcher.backlogged()) return { ok: false, reason: 'store_backlogged', amount };
    const a = this.account(req.accountId);
    const available = a.balance - a.held;
    if (amount > a.balance && available > 0) {
      return { ok: false, reason: 'hold_too_large', amount, exceeds: 'balance', balance: a.balance };
    }
    if (amount > available) return { ok: false, reason: 'insufficient_credit', amount, available: Math.max(0, available) };
    const k = this.key(req.keyId);
    const limit = req.monthlyLimitNano;
    if (limit !== null) {
      if (amount > limit) return { ok: false, reason: 'hold_too_large', amount, exceeds: 'monthly_limit', limit };
      if (k.spent + k.held + amount > limit) {
        return { ok: false, reason: 'monthly_limit_reached', amount, limit, monthToDate: k.spent, keyHeld: k.held };
      }
    }
    const now = this.months.now();
    const h: HoldState = {
      id: this.holdId(), accountId: req.accountId, keyId: req.keyId, amount, createdAt: now,
      requestId: req.requestId ?? null, status: 'open', charged: 0, endedAt: null, persisted: false, queued: false,
    };
    a.held += amount;
    k.held += amount;
    this.open.set(h.id, h);
    this.queue(h);
    return { ok: true, hold: { id: h.id, accountId: h.accountId, keyId: h.keyId, amount, createdAt: h.createdAt } };
  }

  /**
   * Ids that only grow: the store's opening time (a later process sorts after), this process's token
   * for uniqueness, then a fixed-width counter. Each batch appends to the end of the holds index
   * instead of dirtying a random page per hold.
   */
  private holdId(): string {
    return this.holdIdPrefix + String(this.holdSeq++).padStart(12, '0');
  }

  private queue(h: HoldState): void {
    if (!h.queued) {
      h.queued = true;
      this.dirtyHolds.push(h);
    }
    this.batcher.schedule();
  }

  settle(holdId: string, chargeNano: number): number | null {
    const h = this.open.get(holdId);
    if (!h) return null;
    // Upstream numbers are not trusted: the charge is an integer within [0, hold].
    const charged = Number.isFinite(chargeNano) ? Math.min(h.amount, Math.max(0, Math.floor(chargeNano))) : 0;
    const now = this.months.now();
    this.end(h, 'settled', charged, now);
    if (charged > 0) {
      const month = this.months.month(now);
      this.account(h.accountId).balance -= charged;
      this.key(h.keyId, month).spent += charged;
      this.charges.push({ accountId: h.accountId, keyId: h.keyId, amount: charged, holdId, createdAt: now, month });
    }
    return charged;
  }

  release(holdId: string): boolean {
    const h = this.open.get(holdId);
    if (!h) return false;
    this.end(h, 'released', 0, this.months.now());
    return true;
  }

  async releaseExpired(before: number): Promise<string[]> {
    const expired = [...this.open.values()].filter((h) => h.createdAt < before);
    const now = this.months.now();
    for (const h of expired) this.end(h, 'released', 0, now);
    return expired.map((h) => h.id);
  }

  private end(h: HoldState, status: 'settled' | 'released', charged: number, now: number): void {
    this.open.delete(h.id);
    this.account(h.accountId).held -= h.amount;
    this.key(h.keyId).held -= h.amount;
    h.status = status;
    h.charged = charged;
    h.endedAt = now;
    this.queue(h);
  }

  async grant(accountId: number, amountNano: number, note?: string): Promise<LedgerEntry> {
    if (!Number.isSafeInteger(amountNano) || amountNano <= 0) {
      throw new StoreError('invalid', 'a grant must be a positive amount');
    }
    return this.postCredit(() => {
      if (!this.stmt.accountExists.get(accountId)) throw new StoreError('not_found', `no account ${accountId}`);
      return { accountId, amountNano, kind: 'grant', note: note ?? null, paymentId: null };
    })!;
  }

  /**
   * Post a credit with an fsync, then count it in memory. `prepare` runs inside the write
   * transaction, after other processes' entries were read in: it checks and writes what belongs
   * with the credit (a payment's status) and returns the entry to add, or null to add none.
   */
  postCredit(prepare: () => CreditDraft | null): LedgerEntry | null {
    const now = this.months.now();
    const posted = durableTransaction(this.db, () => {
      this.changes.check();
      const c = prepare();
      if (!c) return null;
      const r = this.stmt.insertCredit.run(c.accountId, c.kind, c.amountNano, c.paymentId, c.note, now);
      this.stmt.addBalance.run(c.accountId, c.amountNano);
      return { c, id: Number(r.lastInsertRowid) };
    });
    if (!posted) return null;
    const { c, id } = posted;
    this.lastJournalId = id;
    this.account(c.accountId).balance += c.amountNano;
    this.changes.bump();
    return { id, accountId: c.accountId, keyId: null, kind: c.kind, amountNano: c.amountNano, holdId: null, note: c.note, createdAt: now };
  }

  async entries(accountId: number, opts: { limit?: number } = {}): Promise<LedgerEntry[]> {
    return (this.stmt.entries.all(accountId, opts.limit ?? 20) as JournalRow[]).map(toLedgerEntry);
  }

  async statement(accountId: number): Promise<Statement> {
    return {
      credits: (this.stmt.credits.all(accountId) as JournalRow[]).map(toLedgerEntry),
      charges: (this.stmt.chargesByDay.all(accountId) as DailyChargeRow[]).map(toDailyCharges),
    };
  }

  // --- batch part ---

  take(batch: Batch): void {
    // Holds first (BATCH_SQL's order): a charge's journal row refers to its hold's row.
    for (const h of this.dirtyHolds) {
      h.queued = false;
      if (!h.persisted) {
        batch.insertHold.push(h.id, h.accountId, h.keyId, h.requestId, h.amount, h.status, h.charged,
          h.createdAt, h.endedAt, this.owner.pid, this.owner.token);
      } else if (h.status !== 'open') {
        batch.endHold.push(h.status, h.charged, h.endedAt, h.id);
      }
    }
    const balances = new Map<number, number>();
    const spend = new Map<string, [number, string, number]>();
    for (const c of this.charges) {
      batch.insertCharge.push(c.accountId, c.keyId, -c.amount, c.holdId, c.createdAt);
      balances.set(c.accountId, (balances.get(c.accountId) ?? 0) - c.amount);
      const sk = `${c.keyId} ${c.month}`;
      const s = spend.get(sk);
      if (s) s[2] += c.amount;
      else spend.set(sk, [c.keyId, c.month, c.amount]);
    }
    for (const [account, delta] of balances) batch.addBalance.push(account, delta);
    for (const s of spend.values()) batch.addSpend.push(...s);
    // Snapshots of the holds' state went out: a hold that changes from here on is queued again.
    this.inFlight = { holds: this.dirtyHolds, charges: this.charges };
    this.dirtyHolds = [];
    this.charges = [];
  }

  unwritten(): number {
    return this.dirtyHolds.length + this.charges.length + this.inFlight.holds.length + this.inFlight.charges.length;
  }

  committed(): void {
    for (const h of this.inFlight.holds) h.persisted = true;
    this.inFlight = { holds: [], charges: [] };
  }

  failed(): void {
    // Ahead of the holds queued since; one changed since is queued already, with its newer state.
    const again = this.inFlight.holds.filter((h) => !h.queued);
    for (const h of again) h.queued = true;
    this.dirtyHolds = [...again, ...this.dirtyHolds];
    this.charges = [...this.inFlight.charges, ...this.charges];
    this.inFlight = { holds: [], charges: [] };
  }

  /** Shutdown: holds still open can no longer be settled; release them before the last batch. */
  releaseAll(): void {
    const now = this.months.now();
    for (const h of [...this.open.values()]) this.end(h, 'released', 0, now);
    this.closed = true;
  }
}

/**
 * Release open holds whose owning process is gone: a process that died holding them (its pid no
 * longer runs, or is ours now, e.g. pid 1 in a restarted container). Holds of another live
 * process on the same file (a running server while the command line opens the store) stay open.
 */
export function releaseAbandonedHolds(db: Db, now: number, liveTokens: ReadonlySet<string>): number {
  const owners = db.prepare(`SELECT DISTINCT owner_pid, owner_token FROM holds WHERE status = 'open'`).all() as
    { owner_pid: number; owner_token: string }[];
  const release = db.prepare(`UPDATE holds SET status = 'released', ended_at = ? WHERE status = 'open' AND owner_token = ?`);
  let n = 0;
  for (const o of owners) {
    if (liveTokens.has(o.owner_token)) continue;
    if (o.owner_pid === process.pid || !processRuns(o.owner_pid)) n += release.run(now, o.owner_token).changes;
  }
  return n;
}
