// The credit ledger on PostgreSQL, shared by any number of nodes. Admission is decided by the
// database, in one round trip: gateway_reserve (migration 001) locks the account's balance row,
// checks the available credit (balance − every node's open holds) and the key's month-to-date spend
// plus open holds against its limit, and inserts the hold. A node keeps the holds it created in
// memory: settle and release end them there and answer at once; the end and its charge reach the
// database with the next batch (one conditional statement: a hold another node released meanwhile
// is not charged). Until then the database counts the hold as open for its whole amount, which only
// ever refuses more, never less: a refusal on an account or key with ends not yet written is asked
// again once they are. Credits (grants, top-ups) are written at once, durably.
//
// A serving node (one that listens for changes) admits most holds with no round trip at all, on
// credit it has leased (leases.ts); those holds reach the database only when they end. Keys with a
// monthly limit, and accounts too short of credit to lease, are admitted by the database as above.
import type { Logger } from '../../log.js';
import { FailureRun } from '../../log-run.js';
import type {
  BalanceSummary, Hold, Ledger, LedgerEntry, ReserveRequest, ReserveResult, Statement, ReserveRefusal,
} from '../types.js';
import { StoreError } from '../types.js';
import { DAY_MS } from '../queued-history.js';
import { toDailyCharges, toLedgerEntry, type CreditDraft, type DailyChargeRow, type JournalRow } from '../rows.js';
import type { MonthClock } from '../month.js';
import type { BatchPart, WriteBatcher } from '../write-batcher.js';
import type { HoldEnd, LeasedEnd, PgBatch } from './batch.js';
import type { Db, Tx } from './db.js';
import type { ChangeCounter } from './changes.js';
import { ReserveGroups, type ReserveRow } from './reserve-groups.js';
import { DRAIN_WAIT_MS, LEASE_CHANNEL, LeaseBook, ReturnWaits, type LeaseReport } from './leases.js';

/** Of the ends in $2, those the database shows ended: written (a hold admitted on a lease is absent until then). */
const ENDED_IN_DB = `ARRAY(SELECT id FROM holds WHERE id = ANY($2::text[]) AND status <> 'open')`;

interface OpenHold extends Hold {
  requestId: string | null;
  /** Admitted on a lease of this owner (see leases.ts); absent: by the database. */
  owner?: string;
}

interface EndedHold extends HoldEnd {
  accountId: number;
  keyId: number;
  amount: number;
  requestId: string | null;
  createdAt: number;
  owner?: string;
}

/** An end with a charge is two rows (the hold's and the journal's), as in the SQLite store; without, one. */
const rowsOf = (charged: number) => (charged > 0 ? 2 : 1);

export class PgLedger implements Ledger, BatchPart<PgBatch> {
  private readonly open = new Map<string, OpenHold>();
  /** Ended here, to be written with the next batch; and those of the batch in flight. */
  private ended: EndedHold[] = [];
  private inFlight: EndedHold[] = [];
  /**
   * The rows of `ended` and of `inFlight` (rowsOf), kept as they change: every admission asks for
   * the backlog, and counting the lists each time cost O(rows) per request (1.4 µs at 8,000 req/s).
   */
  private endedRows = 0;
  private inFlightRows = 0;
  private inFlightBatch: PgBatch | undefined;
  /** Lease reports of a batch that failed: written again, as they were (each applies once, by its seq). */
  private reportsAgain: LeaseReport[] = [];
  /** Set by enableLeases (a serving node); absent: every hold is admitted by the database. */
  private leases: LeaseBook | undefined;
  private readonly returnWaits = new ReturnWaits();
  private schema: () => string | undefined = () => undefined;
  /** Reserves waiting for the database: close waits for them, so no hold is created after it. */
  private readonly reserving = new Set<Promise<unknown>>();
  /** Their hold ids, until the hold is in `open` (or the reserve failed or was refused). */
  private readonly reservingIds = new Set<string>();
  private reconcileTimer: NodeJS.Timeout | undefined;
  private holdSeq = 0;
  private readonly holdIdPrefix: string;
  private closed = false;
  /** The database away: the first failed reserve and the recovery are logged, the others counted. */
  private readonly outage: FailureRun;
  readonly groups: ReserveGroups;

  constructor(
    private readonly db: Db,
    private readonly batcher: WriteBatcher<PgBatch>,
    private readonly changes: ChangeCounter,
    private readonly months: MonthClock,
    private readonly nodeId: string,
    private readonly log: Logger,
  ) {
    // Ids that only grow within a node: its start time, its id, then a fixed-width counter.
    this.holdIdPrefix = `${months.now().toString(36)}-${nodeId.slice(0, 8)}-`;
    this.outage = new FailureRun(log, {
      first: 'store: the database cannot be reached; requests that need a credit hold get 503 until it can',
      again: 'store: reserves refused while the database is away',
      recovered: 'store: the database is reachable again',
    });
    this.groups = new ReserveGroups(db, nodeId, () => {
      const now = months.now();
      return { month: months.month(now), now };
    });
    batcher.add(this);
  }

  /**
   * Admit on leased credit from now on (leases.ts). `mayLease`: whether this node hears the lease
   * channel and its heartbeat is recent enough; `clock` the store's.
   */
  enableLeases(mayLease: () => boolean, clock: () => number, schema: () => string | undefined): LeaseBook {
    this.schema = schema;
    this.leases = new LeaseBook(this.nodeId, {
      clock,
      mayLease,
      schedule: () => this.batcher.schedule(),
      // Durable: a grant lost with a database crash's last commits would leave this node admitting on credit no longer held.
      grow: (accountId, owner, want, min) => this.db.transaction(async (tx) => (await tx.query<{ granted: number }>(
        'SELECT granted FROM gateway_lease($1, $2, $3, $4, $5)', [accountId, owner, this.nodeId, want, min]))[0].granted, { durable: true }),
    });
    return this.leases;
  }

  /** Lease calls made (0 without leases). */
  get leaseGrows(): number {
    return this.leases?.grows ?? 0;
  }

  /** A message on the lease channel for this store's schema (see leases.ts): what, the account, the owner saying it. */
  async heardOnLeaseChannel(what: string, accountId: number, owner: string): Promise<void> {
    if (!this.leases || !Number.isSafeInteger(accountId)) return;
    if (what === 'returned') this.returnWaits.heard(accountId, owner);
    if (what !== 'return' || owner === this.leases.owner) return;
    // Another node is short of this account's credit: give back what is free, written at once, then say so.
    this.leases.tighten(accountId);
    await this.batcher.flush().catch(() => {});
    await this.notifyLeases('returned', accountId).catch(() => {});
  }

  private async notifyLeases(what: 'return' | 'returned', accountId: number): Promise<void> {
    await this.db.query('SELECT pg_notify($1, $2)', [LEASE_CHANNEL, `${what} ${this.schema()} ${accountId} ${this.leases!.owner}`]);
  }

  /** Ends not yet written, with the database's view of each: their holds still count as open there. */
  private unwrittenEnds(): EndedHold[] {
    return [...this.inFlight, ...this.ended];
  }

  /**
   * The database's figures for the account, less what this node has ended but not yet written (of
   * those, the ones the database does not show ended: a batch may be committed before its
   * confirmation). Held: the database's open holds, what other nodes' requests hold of their
   * leases (as of their last batch), and what this node's requests hold of its own.
   */
  async balance(accountId: number): Promise<BalanceSummary> {
    const pending = this.unwrittenEnds().filter((e) => e.accountId === accountId);
    const r = (await this.db.one<{ balance: number; held: number; leased: number; ended: string[] }>(
      `SELECT COALESCE((SELECT balance FROM balances WHERE account_id = $1), 0) AS balance,
        (SELECT COALESCE(SUM(amount), 0)::BIGINT FROM holds WHERE account_id = $1 AND status = 'open') AS held,
        (SELECT COALESCE(SUM(in_use), 0)::BIGINT FROM leases WHERE account_id = $1 AND owner <> $3) AS leased,
        ${ENDED_IN_DB} AS ended`,
      [accountId, pending.map((e) => e.id), this.leases?.owner ?? '']))!;
    const ended = new Set(r.ended);
    let balance = r.balance;
    let held = r.held + r.leased + (this.leases?.inUse(accountId) ?? 0);
    for (const e of pending) {
      if (ended.has(e.id)) continue;
      if (!e.owner) held -= e.amount;
      balance -= e.charged;
    }
    return { balance, held, available: Math.max(0, balance - held) };
  }

  async monthToDate(keyId: number): Promise<number> {
    const month = this.months.month();
    const pending = this.unwrittenEnds().filter((e) => e.keyId === keyId && e.month === month && e.charged > 0);
    const r = (await this.db.one<{ spent: number; ended: string[] }>(
      `SELECT COALESCE((SELECT spent FROM key_spend WHERE key_id = $1 AND month = $3), 0) AS spent, ${ENDED_IN_DB} AS ended`,
      [keyId, pending.map((e) => e.id), month]))!;
    const ended = new Set(r.ended);
    return r.spent + pending.reduce((sum, e) => sum + (ended.has(e.id) ? 0 : e.charged), 0);
  }

  /**
   * The database's open holds per key (every node's), less those this node has ended but not yet
   * written, and this node's holds on its leases (other nodes' lease holds are not known per key).
   */
  async heldByKey(accountId: number): Promise<Map<number, number>> {
    const pending = this.unwrittenEnds().filter((e) => e.accountId === accountId && !e.owner);
    const r = (await this.db.one<{ held: { key_id: number; held: number }[]; ended: string[] }>(
      `SELECT COALESCE((SELECT json_agg(json_build_object('key_id', key_id, 'held', held)) FROM
          (SELECT key_id, SUM(amount)::BIGINT AS held FROM holds WHERE account_id = $1 AND status = 'open' GROUP BY key_id) h), '[]') AS held,
        ${ENDED_IN_DB} AS ended`,
      [accountId, pending.map((e) => e.id)]))!;
    const out = new Map(r.held.map((h) => [Number(h.key_id), Number(h.held)]));
    const ended = new Set(r.ended);
    for (const e of pending) if (!ended.has(e.id)) out.set(e.keyId, (out.get(e.keyId) ?? 0) - e.amount);
    for (const h of this.open.values()) if (h.owner && h.accountId === accountId) out.set(h.keyId, (out.get(h.keyId) ?? 0) + h.amount);
    for (const [k, v] of out) if (v <= 0) out.delete(k);
    return out;
  }

  openHolds(): { count: number; nano: number } {
    let nano = 0;
    for (const h of this.open.values()) nano += h.amount;
    return { count: this.open.size, nano };
  }

  reserve(req: ReserveRequest): ReserveResult | Promise<ReserveResult> {
    if (this.closed) throw new StoreError('invalid', 'store is closed');
    const { amount } = req;
    if (!Number.isSafeInteger(amount) || amount < 0) throw new StoreError('invalid', `bad hold amount ${amount}`);
    if (this.batcher.backlogged()) return { ok: false, reason: 'store_backlogged', amount };
    if (this.leases && amount > 0 && req.monthlyLimitNano === null) {
      const taken = this.leases.take(req.accountId, amount);
      if (taken === true) return this.openOnLease(req);
      if (taken !== false) return this.tracked(taken.then((ok) => (ok ? this.openOnLease(req) : this.admit(req, true))));
    }
    return this.tracked(this.admit(req, true));
  }

  /** A reserve waiting for the database: close waits for it, so no hold is created after it. */
  private tracked(admitted: Promise<ReserveResult>): Promise<ReserveResult> {
    this.reserving.add(admitted);
    const done = () => this.reserving.delete(admitted);
    admitted.then(done, done);
    return admitted;
  }

  private nextHoldId(): string {
    return this.holdIdPrefix + String(this.holdSeq++).padStart(12, '0');
  }

  /** A hold admitted on this node's lease (taken already): in memory only until it ends. */
  private openOnLease(req: ReserveRequest): ReserveResult {
    const id = this.nextHoldId();
    const now = this.months.now();
    const hold: OpenHold = { id, accountId: req.accountId, keyId: req.keyId, amount: req.amount, createdAt: now,
      requestId: req.requestId ?? null, owner: this.leases!.owner };
    this.open.set(id, hold);
    return { ok: true, hold: { id, accountId: hold.accountId, keyId: hold.keyId, amount: hold.amount, createdAt: now } };
  }

  private async admit(req: ReserveRequest, mayRetry: boolean): Promise<ReserveResult> {
    const { amount } = req;
    const id = this.nextHoldId();
    const now = this.months.now();
    let row: ReserveRow;
    this.reservingIds.add(id);
    try {
      row = await this.groups.reserve({ holdId: id, accountId: req.accountId, keyId: req.keyId, amount,
        monthlyLimitNano: req.monthlyLimitNano, requestId: req.requestId ?? null });
      this.outage.ok();
    } catch (err) {
      this.reservingIds.delete(id);
      if (!(err instanceof StoreError && err.code === 'unavailable')) throw err;
      // Money is never spent without a hold: the request is refused (503), the node carries on.
      // (If the hold was inserted after all, its answer lost, reconcile() releases it.)
      this.outage.failed((err as Error).message);
      return { ok: false, reason: 'store_backlogged', amount };
    }
    this.reservingIds.delete(id);
    if (row.reason === null) {
      const hold: OpenHold = { id, accountId: req.accountId, keyId: req.keyId, amount, createdAt: now, requestId: req.requestId ?? null };
      this.open.set(id, hold);
      return { ok: true, hold: { id, accountId: hold.accountId, keyId: hold.keyId, amount, createdAt: now } };
    }
    if (mayRetry && row.reason === 'insufficient_credit' && this.leases && await this.othersReturned(req.accountId)) {
      return this.admit(req, false);
    }
    if (mayRetry && (row.reason === 'insufficient_credit' || row.reason === 'monthly_limit_reached') &&
        this.unwrittenEnds().some((e) => e.accountId === req.accountId)) {
      // The database still counts holds this node ended in full: write those ends, then ask again.
      await this.batcher.flush().catch(() => {});
      return this.admit(req, false);
    }
    return refusal(row, req);
  }

  /**
   * Before a refusal is final: the credit may sit unused in leases. Return this node's (written at
   * once) and ask every other node holding one on the account to return theirs; wait until they
   * have (or DRAIN_WAIT_MS). Whether anything was leased: then the database is asked again.
   */
  private async othersReturned(accountId: number): Promise<boolean> {
    const leases = this.leases!;
    leases.tighten(accountId);
    // Other owners with a lease on the account (all of them: what they use of it is known only as of
    // their last batch, and a node asked answers at once), and this node's own lease.
    const [r] = await this.db.query<{ owners: string[]; own: number }>(`SELECT ARRAY(SELECT owner FROM leases
        WHERE account_id = $1 AND owner <> $2 AND amount > 0) AS owners,
      (SELECT COALESCE(SUM(amount), 0)::BIGINT FROM leases WHERE account_id = $1 AND owner = $2) AS own`, [accountId, leases.owner]).catch(() => []);
    if (!r || (r.owners.length === 0 && r.own === 0)) return false;
    if (r.owners.length) {
      const returned = this.returnWaits.wait(accountId, r.owners, DRAIN_WAIT_MS);
      await this.notifyLeases('return', accountId).catch(() => {});
      await returned;
    }
    await this.batcher.flush().catch(() => {});
    return true;
  }

  settle(holdId: string, chargeNano: number): number | null {
    const h = this.open.get(holdId);
    if (!h) return null;
    // Upstream numbers are not trusted: the charge is an integer within [0, hold].
    const charged = Number.isFinite(chargeNano) ? Math.min(h.amount, Math.max(0, Math.floor(chargeNano))) : 0;
    this.end(h, 'settled', charged);
    return charged;
  }

  release(holdId: string): boolean {
    const h = this.open.get(holdId);
    if (!h) return false;
    this.end(h, 'released', 0);
    return true;
  }

  async releaseExpired(before: number): Promise<string[]> {
    const expired = [...this.open.values()].filter((h) => h.createdAt < before);
    for (const h of expired) this.end(h, 'released', 0);
    return expired.map((h) => h.id);
  }

  private end(h: OpenHold, status: 'settled' | 'released', charged: number): void {
    this.open.delete(h.id);
    const endedAt = this.months.now();
    this.ended.push({ id: h.id, accountId: h.accountId, keyId: h.keyId, amount: h.amount, status, charged, endedAt,
      month: this.months.month(endedAt), requestId: h.requestId, createdAt: h.createdAt, owner: h.owner });
    this.endedRows += rowsOf(charged);
    if (h.owner) this.leases?.end(h.accountId, h.owner, h.amount, charged);
    this.batcher.schedule();
  }

  async grant(accountId: number, amountNano: number, note?: string): Promise<LedgerEntry> {
    if (!Number.isSafeInteger(amountNano) || amountNano <= 0) {
      throw new StoreError('invalid', 'a grant must be a positive amount');
    }
    return (await this.postCredit(async (tx) => {
      const [exists] = await tx.query('SELECT 1 FROM accounts WHERE id = $1', [accountId]);
      if (!exists) throw new StoreError('not_found', `no account ${accountId}`);
      return { accountId, amountNano, kind: 'grant', note: note ?? null, paymentId: null };
    }))!;
  }

  /**
   * Post a credit in one durable transaction. `prepare` runs inside it first: it checks and writes
   * what belongs with the credit (a payment's status) and returns the entry to add, or null to add none.
   */
  async postCredit(prepare: (tx: Tx) => Promise<CreditDraft | null>): Promise<LedgerEntry | null> {
    const now = this.months.now();
    const posted = await this.db.transaction(async (tx) => {
      const c = await prepare(tx);
      if (!c) return null;
      const [r] = await tx.query<{ id: number }>(`INSERT INTO journal (account_id, kind, amount, payment_id, note, created_at)
        VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`, [c.accountId, c.kind, c.amountNano, c.paymentId, c.note, now]);
      await tx.query(`INSERT INTO balances AS b (account_id, balance) VALUES ($1, $2)
        ON CONFLICT (account_id) DO UPDATE SET balance = b.balance + excluded.balance`, [c.accountId, c.amountNano]);
      return { c, id: r.id };
    }, { durable: true });
    if (!posted) return null;
    const { c, id } = posted;
    this.changes.bump();
    return { id, accountId: c.accountId, keyId: null, kind: c.kind, amountNano: c.amountNano, holdId: null, note: c.note, createdAt: now };
  }

  async entries(accountId: number, opts: { limit?: number } = {}): Promise<LedgerEntry[]> {
    return (await this.db.query<JournalRow>('SELECT * FROM journal WHERE account_id = $1 ORDER BY id DESC LIMIT $2', [accountId, opts.limit ?? 20])).map(toLedgerEntry);
  }

  async statement(accountId: number): Promise<Statement> {
    const [credits, charges] = await Promise.all([
      this.db.query<JournalRow>(`SELECT * FROM journal WHERE account_id = $1 AND kind <> 'charge' ORDER BY id DESC`, [accountId]),
      this.db.query<DailyChargeRow>(`SELECT created_at / ${DAY_MS} AS day, COUNT(*)::BIGINT AS count, SUM(amount)::BIGINT AS amount FROM journal
        WHERE account_id = $1 AND kind = 'charge' GROUP BY day ORDER BY day DESC`, [accountId]),
    ]);
    return { credits: credits.map(toLedgerEntry), charges: charges.map(toDailyCharges) };
  }

  // --- batch part ---

  take(batch: PgBatch): void {
    for (const e of this.ended) {
      if (e.owner) batch.leasedEnds.push(e as LeasedEnd);
      else batch.ends.push(e);
    }
    batch.leaseReports.push(...this.reportsAgain, ...(this.leases?.reports() ?? []));
    this.reportsAgain = [];
    this.inFlight = this.ended;
    this.inFlightRows = this.endedRows;
    this.inFlightBatch = batch;
    this.ended = [];
    this.endedRows = 0;
  }

  /** Hold ends' rows (rowsOf) and lease reports (a row each), queued or in flight. */
  unwritten(): number {
    return this.endedRows + this.inFlightRows + this.reportsAgain.length + (this.inFlightBatch?.leaseReports.length ?? 0);
  }

  committed(): void {
    const notOpen = [...this.inFlightBatch?.notOpen ?? [], ...this.inFlightBatch?.unleased ?? []];
    if (notOpen.length) {
      const lost = this.inFlight.filter((e) => notOpen.includes(e.id));
      this.log('warn', 'store: holds this node ended had been ended already, or their lease swept, by another node that took this node for dead ' +
        '(or by an earlier attempt of this batch whose commit was not confirmed); their charges are not posted again',
        { holds: lost.length, charges_nano: lost.reduce((s, e) => s + e.charged, 0) });
    }
    this.inFlight = [];
    this.inFlightRows = 0;
    this.inFlightBatch = undefined;
  }

  failed(): void {
    this.ended = [...this.inFlight, ...this.ended];
    this.endedRows += this.inFlightRows;
    this.reportsAgain = [...(this.inFlightBatch?.leaseReports ?? []), ...this.reportsAgain];
    this.inFlight = [];
    this.inFlightRows = 0;
    this.inFlightBatch = undefined;
  }

  /**
   * Release the holds the database shows open for this node that this node does not know: no
   * request of its runs on them. Their ends were acknowledged and then lost (a database crash loses
   * its last asynchronous commits, and a hold's insert can outlive its end's batch), or a reserve
   * committed after its call failed here. Nothing else would end them (sweeps leave a live node's
   * holds alone): their credit would stay held until the node stops. Their charges, if any, are
   * lost with the batch, as the README says of a database crash.
   */
  async reconcile(): Promise<string[]> {
    const inDb = await this.db.query<{ id: string }>(`SELECT id FROM holds WHERE node_id = $1 AND status = 'open'`, [this.nodeId]);
    // Known: open here, being reserved, or ended here with the end not yet written.
    const unwritten = new Set(this.unwrittenEnds().map((e) => e.id));
    const unknown = inDb.map((r) => r.id).filter((id) => !this.open.has(id) && !this.reservingIds.has(id) && !unwritten.has(id));
    if (unknown.length === 0) return [];
    const released = await this.db.query<{ id: string }>(`UPDATE holds SET status = 'released', ended_at = $2
      WHERE id = ANY($1::text[]) AND status = 'open' RETURNING id`, [unknown, this.months.now()]);
    if (released.length > 0) {
      this.log('warn', 'store: released holds the database showed open for this node but no request of its holds ' +
        '(their ends were lost, most likely with the last commits of a database crash)', { holds: released.length });
    }
    return released.map((r) => r.id);
  }

  /**
   * Leases the database holds for this node beyond what it counts: a grow whose answer was lost
   * (the node counted nothing), returns or charges lost with a database crash's last commits, or a
   * lease of a name this node no longer goes by (it was taken for dead). The first are adopted
   * (their surplus is free lease, used or returned like any); the last deleted. Only when nothing
   * of this node's is on its way to the database, so both sides are compared as of the same writes.
   */
  async reconcileLeases(): Promise<void> {
    const book = this.leases;
    if (!book) return;
    await this.db.query('DELETE FROM leases WHERE node_id = $1 AND owner <> $2', [this.nodeId, book.owner]);
    const quiet = () => !this.inFlightBatch && this.ended.length === 0 && this.reportsAgain.length === 0 && book.settled();
    const version = book.version;
    if (!quiet()) return;
    const rows = await this.db.query<{ account_id: number; amount: number }>('SELECT account_id, amount FROM leases WHERE owner = $1', [book.owner]);
    if (!quiet() || book.version !== version) return;
    const adopted = book.adopt(rows.map((r) => [r.account_id, r.amount]));
    if (adopted > 0) this.log('warn', 'store: the database held more lease for this node than it counted (a lost answer or commit); adopted', { nano: adopted });
  }

  /** Reconcile every `intervalMs` until release; a failure (the database away) waits for the next tick. */
  startReconciling(intervalMs: number): void {
    if (this.closed) return;
    this.reconcileTimer = setInterval(() => void this.reconcile().then(() => this.reconcileLeases()).catch(() => {}), intervalMs);
    this.reconcileTimer.unref();
  }

  /** Shutdown: no new holds; wait for reserves in flight, then release every hold still open before the last batch. */
  async releaseAll(): Promise<void> {
    this.closed = true;
    clearInterval(this.reconcileTimer);
    await Promise.allSettled([...this.reserving]);
    for (const h of [...this.open.values()]) this.end(h, 'released', 0);
    this.leases?.returnAll();
  }

  /** After the last batch is written: this node's leases (all returned by then) go. */
  async dropLeases(): Promise<void> {
    if (this.leases) await this.db.query('DELETE FROM leases WHERE node_id = $1', [this.nodeId]);
  }
}

function refusal(r: ReserveRow, req: ReserveRequest): ReserveRefusal {
  const { amount } = req;
  switch (r.reason) {
    case 'hold_too_large_balance':
      return { ok: false, reason: 'hold_too_large', amount, exceeds: 'balance', balance: r.balance };
    case 'hold_too_large_limit':
      return { ok: false, reason: 'hold_too_large', amount, exceeds: 'monthly_limit', limit: req.monthlyLimitNano! };
    case 'monthly_limit_reached':
      return { ok: false, reason: 'monthly_limit_reached', amount, limit: req.monthlyLimitNano!, monthToDate: r.month_to_date!, keyHeld: r.key_held! };
    default:
      return { ok: false, reason: 'insufficient_credit', amount, available: Math.max(0, r.available) };
  }
}
