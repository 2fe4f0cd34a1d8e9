// Credit leases: how a serving node admits most requests with no round trip to the database.
//
// A node takes a slice of an account's available credit (a lease: one call, gateway_lease in
// migration 006, under the account's balance lock like every reserve) and admits holds against it
// in memory. The database counts the whole lease as held, so whatever one node admits locally no
// other node can admit again: available credit is balance − open holds − every node's leases. A
// hold admitted on a lease reaches the database only when it ends, already ended, with the next
// batch; its charge spends from the lease in the same transaction as it leaves the balance. What a
// node does not need it gives back (a return, also batched, applied once however often its batch
// is written). A lease is grown in the background before it runs out (LOW_WATER), so in steady
// state admission costs no round trip at all.
//
// Exactness when credit runs short: a node whose lease cannot grow by the hold it needs stops
// leasing that account for TIGHT_MS (the account is "tight"): it returns the lease's free part and
// admits through the database, hold by hold, as a node without leases does. Before such a reserve
// is refused, the node asks every node holding a lease on the account to do the same (NOTIFY on
// LEASE_CHANNEL), waits until they say they have (or DRAIN_WAIT_MS), and asks the database again:
// a refusal then means the credit is held by requests in flight, as it does without leases.
//
// Leases live only as long as the node's heartbeat: a node admits on them only while its last
// heartbeat is recent enough that no other node can have taken it for dead (a sweep deletes a dead
// node's leases, and its credit is then anyone's). A node taken for dead comes back under a new
// owner name; the holds it admitted under the old one end without a charge, as its swept holds do.
// A node that cannot hear LEASE_CHANNEL (its listening connection is down) leases nothing.

/** A lease is grown by this many holds of the request that needed it, or by LEASE_SPEND_MS of its recent spend if more… */
export const LEASE_HOLDS = 32;
/** …in the background when fewer than this many holds are left, or less than LOW_WATER_SPEND_MS of spend. */
export const LOW_WATER_HOLDS = 8;
/**
 * Sized on holds alone, a busy account's lease ran dry several times a second: at 2,500 requests a
 * second charging a quarter of their hold, 85 lease calls in 12 s, and one request in ten waited for
 * one (each waits for the balance lock, which a batch being written holds). Sized on the spend, a
 * lease lasts about this long; the database counts it whole as held, and another node short of
 * credit has it returned (see above), so a larger lease costs no one credit.
 */
export const LEASE_SPEND_MS = 1000;
/** A grow waits for the balance lock behind a batch (up to its commit interval and its write). */
export const LOW_WATER_SPEND_MS = 250;
/** The spend rate is measured over windows of this length (the last whole one counts). */
const SPEND_WINDOW_MS = 1000;
/** How long an account short of credit is admitted through the database rather than leased. */
export const TIGHT_MS = 5000;
/** How long a refused reserve waits for the other nodes to return their leases before it is final. */
export const DRAIN_WAIT_MS = 500;
/** Lease validity ends this long before the heartbeat bound, for clock and scheduling slack. */
export const VALIDITY_MARGIN_MS = 1000;

export const LEASE_CHANNEL = 'gateway_leases';

interface AccountLease {
  /** What the database will count as this owner's lease once the queued charges and returns are written. */
  amount: number;
  /** Held by this node's open holds admitted on it. */
  inUse: number;
  /** Returned here, to be written with the next batch. */
  returning: number;
  /** In use changed since the last report (the database shows it to account owners). */
  reported: boolean;
  growing: Promise<void> | undefined;
  /** Admitted through the database until then (store clock). */
  tightUntil: number;
  /** Charged in the current spend window, which started at `windowStart` (store clock). */
  windowSpent: number;
  windowStart: number;
  /** Nano-USD per ms charged in the last whole window. */
  spendRate: number;
}

/** What a batch writes for one lease: a return (once, by its seq) and what is in use. */
export interface LeaseReport {
  accountId: number;
  owner: string;
  returned: number;
  seq: number;
  inUse: number;
}

export interface LeaseDeps {
  clock(): number;
  /** gateway_lease: grow this owner's lease by up to `want`, not by less than `min`; what was granted. */
  grow(accountId: number, owner: string, want: number, min: number): Promise<number>;
  /** Reports queued: have them written soon. */
  schedule(): void;
  /** Whether this node may lease now: it hears LEASE_CHANNEL and its heartbeat is recent (see top). */
  mayLease(): boolean;
}

/** Refused reserves waiting for the other nodes to return their leases on an account. */
export class ReturnWaits {
  private readonly waiting = new Map<number, { owners: Set<string>; done(): void }[]>();

  /** Resolves once each of `owners` has said it returned its lease on the account, or after `ms`. */
  wait(accountId: number, owners: string[], ms: number): Promise<void> {
    return new Promise((resolve) => {
      const entry = { owners: new Set(owners), done: () => {} };
      const timer = setTimeout(() => entry.done(), ms);
      entry.done = () => {
        clearTimeout(timer);
        const list = this.waiting.get(accountId) ?? [];
        const i = list.indexOf(entry);
        if (i >= 0) list.splice(i, 1);
        if (list.length === 0) this.waiting.delete(accountId);
        resolve();
      };
      const list = this.waiting.get(accountId) ?? [];
      list.push(entry);
      this.waiting.set(accountId, list);
    });
  }

  /** `owner` returned the free part of its lease on the account. */
  heard(accountId: number, owner: string): void {
    for (const entry of [...(this.waiting.get(accountId) ?? [])]) {
      entry.owners.delete(owner);
      if (entry.owners.size === 0) entry.done();
    }
  }
}

export class LeaseBook {
  private readonly leases = new Map<number, AccountLease>();
  private seq = 0;
  private generation = 0;
  /** nodeId/generation, kept as one string: every hold taken and ended compares it. */
  private ownerName: string;
  /** Lease calls made (tests: far fewer than holds). */
  grows = 0;
  /** Moves with every change of a lease's amount (reconciliation compares only between two equal readings). */
  version = 0;

  constructor(private readonly nodeId: string, private readonly deps: LeaseDeps) {
    this.ownerName = `${nodeId}/0`;
  }

  /** The name this node's leases are held under in the database (see migration 006). */
  get owner(): string {
    return this.ownerName;
  }

  /**
   * Admit a hold of `amount` on the account's lease: true (taken; settle with `end`), a promise
   * when the lease must grow first, or false: admit it through the database.
   */
  take(accountId: number, amount: number): boolean | Promise<boolean> {
    if (!this.deps.mayLease()) return false;
    const l = this.lease(accountId);
    if (l.tightUntil > this.deps.clock()) return false;
    if (l.amount - l.inUse >= amount) {
      this.use(l, amount);
      if (l.amount - l.inUse < Math.max(amount * LOW_WATER_HOLDS, l.spendRate * LOW_WATER_SPEND_MS)) void this.grow(accountId, l, amount).catch(() => {});
      return true;
    }
    return this.grow(accountId, l, amount).then(() => {
      if (l.amount - l.inUse >= amount && l.tightUntil <= this.deps.clock() && this.deps.mayLease()) {
        this.use(l, amount);
        return true;
      }
      return false;
    }, () => false);
  }

  /** A hold taken on the lease ended, `charged` of it spent (its end, with the charge, goes in a batch). */
  end(accountId: number, owner: string, amount: number, charged: number): void {
    if (owner !== this.owner) return; // admitted under a swept lease: nothing of it is here any more
    const l = this.leases.get(accountId);
    if (!l) return;
    l.inUse -= amount;
    l.amount -= charged;
    this.version++;
    l.reported = false;
    const now = this.deps.clock();
    if (now - l.windowStart >= SPEND_WINDOW_MS) {
      l.spendRate = l.windowSpent / (now - l.windowStart);
      l.windowSpent = 0;
      l.windowStart = now;
    }
    l.windowSpent += charged;
    if (l.tightUntil > now || !this.deps.mayLease()) this.giveBack(l);
    this.deps.schedule();
  }

  /** Another node needs the credit (or this one is short of it): return what is free and lease no more of it for a while. */
  tighten(accountId: number): void {
    const l = this.lease(accountId);
    l.tightUntil = this.deps.clock() + TIGHT_MS;
    this.giveBack(l);
  }

  /** Return every lease's free part (this node stops leasing: not listening, or shutting down). */
  returnAll(): void {
    for (const l of this.leases.values()) this.giveBack(l);
  }

  /** The node was taken for dead and its leases swept: start again under a new owner name. */
  forgetAll(): void {
    this.generation++;
    this.ownerName = `${this.nodeId}/${this.generation}`;
    this.version++;
    this.leases.clear();
  }

  /** No grow in flight and no return unreported (the ledger checks its batches): the database's lease amounts are this book's. */
  settled(): boolean {
    for (const l of this.leases.values()) if (l.growing || l.returning > 0) return false;
    return true;
  }

  /** The database's amounts for this owner's leases (when settled): a surplus is adopted; returns it. */
  adopt(rows: [accountId: number, amount: number][]): number {
    let surplus = 0;
    for (const [accountId, amount] of rows) {
      const l = this.lease(accountId);
      if (amount > l.amount) {
        surplus += amount - l.amount;
        l.amount = amount;
        this.version++;
      }
    }
    return surplus;
  }

  /** Held by this node's open holds on the account's lease (shown with the account's held credit). */
  inUse(accountId: number): number {
    return this.leases.get(accountId)?.inUse ?? 0;
  }

  /** The reports a batch writes: one per lease whose return or use changed since the last. */
  reports(): LeaseReport[] {
    const out: LeaseReport[] = [];
    const now = this.deps.clock();
    for (const [accountId, l] of this.leases) {
      if (!l.reported || l.returning > 0) {
        out.push({ accountId, owner: this.owner, returned: l.returning, seq: ++this.seq, inUse: l.inUse });
        l.returning = 0;
        l.reported = true;
      }
      // Nothing leased, nothing to say, not tight: the entry goes (memory stays bounded by the accounts in use).
      if (l.amount === 0 && l.inUse === 0 && !l.growing && l.tightUntil <= now) this.leases.delete(accountId);
    }
    return out;
  }

  private lease(accountId: number): AccountLease {
    let l = this.leases.get(accountId);
    if (!l) {
      l = { amount: 0, inUse: 0, returning: 0, reported: true, growing: undefined, tightUntil: 0, windowSpent: 0, windowStart: this.deps.clock(), spendRate: 0 };
      this.leases.set(accountId, l);
    }
    return l;
  }

  private use(l: AccountLease, amount: number): void {
    l.inUse += amount;
    l.reported = false;
    this.deps.schedule();
  }

  private giveBack(l: AccountLease): void {
    const free = l.amount - l.inUse;
    if (free <= 0) return;
    l.amount -= free;
    l.returning += free;
    this.version++;
    l.reported = false;
    this.deps.schedule();
  }

  /** One grow per lease at a time; too little credit for this hold: the account turns tight. */
  private grow(accountId: number, l: AccountLease, amount: number): Promise<void> {
    l.growing ??= (async () => {
      const owner = this.owner;
      this.grows++;
      try {
        // A grow that fails without an answer may have been granted: the database then holds more
        // than this node counts (it errs on refusing), until reconciliation adopts it.
        const granted = await this.deps.grow(accountId, owner, Math.max(amount * LEASE_HOLDS, Math.ceil(l.spendRate * LEASE_SPEND_MS)), amount);
        if (owner !== this.owner) return; // swept meanwhile: the grant belongs to the old name (reconcile deletes it)
        l.amount += granted;
        this.version++;
        if (granted < amount) this.tighten(accountId);
      } finally {
        l.growing = undefined;
      }
    })();
    return l.growing;
  }
}
