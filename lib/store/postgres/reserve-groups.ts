// Admission calls, grouped. A reserve that arrives while no admission call is in flight goes at
// once, alone (no added latency when the node is quiet); those that arrive while one is in flight
// wait for it and then go together in the next call (gateway_reserve_many, migration 003), the way
// the write batcher groups commits. Under load a node thus makes one round trip, one transaction
// and one lock of each account's balance row per group instead of per request: the database's work
// per request, which on a shared machine is CPU taken from the gateway, shrinks with the load.
import type { Db } from './db.js';

export interface ReserveCall {
  holdId: string;
  accountId: number;
  keyId: number;
  amount: number;
  monthlyLimitNano: number | null;
  requestId: string | null;
}

export interface ReserveRow {
  reason: null | 'insufficient_credit' | 'monthly_limit_reached' | 'hold_too_large_balance' | 'hold_too_large_limit';
  balance: number;
  available: number;
  month_to_date: number | null;
  key_held: number | null;
}

interface Waiting {
  call: ReserveCall;
  resolve(row: ReserveRow): void;
  reject(err: unknown): void;
}

const RESERVE_MANY = {
  name: 'gateway_reserve_many',
  text: 'SELECT * FROM gateway_reserve_many($1, $2, $3, $4, $5, $6, $7, $8, $9)',
};

/** Enough to amortise the call, small enough that one group's transaction stays short. */
export const MAX_GROUP = 256;

export class ReserveGroups {
  private waiting: Waiting[] = [];
  private inFlight = false;
  /** Admission calls made, for tests and metrics: under load, far fewer than reserves. */
  calls = 0;

  /** `at`: the month ('YYYY-MM') and time of the call, read when a group is sent. */
  constructor(private readonly db: Db, private readonly nodeId: string, private readonly at: () => { month: string; now: number }) {}

  /** The database's decision on one reserve (the hold is inserted when admitted). */
  reserve(call: ReserveCall): Promise<ReserveRow> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ call, resolve, reject });
      if (!this.inFlight) this.send();
    });
  }

  private send(): void {
    if (this.waiting.length === 0) return;
    // Account order is the lock order of every writer (see batch.ts): groups never deadlock.
    const group = this.waiting.splice(0, MAX_GROUP).sort((a, b) => a.call.accountId - b.call.accountId);
    const calls = group.map((w) => w.call);
    const { month, now } = this.at();
    this.inFlight = true;
    this.calls++;
    this.db.query<ReserveRow & { i: number }>({
      ...RESERVE_MANY,
      values: [calls.map((c) => c.holdId), calls.map((c) => c.accountId), calls.map((c) => c.keyId), calls.map((c) => c.amount),
        calls.map((c) => c.monthlyLimitNano), calls.map((c) => c.requestId), month, now, this.nodeId],
    }).then((rows) => {
      for (const row of rows) group[row.i - 1].resolve(row);
      // One row per reserve; a promise left pending would hold its request (and shutdown) forever.
      if (rows.length !== group.length) for (const w of group) w.reject(new Error('gateway_reserve_many: a reserve without its answer'));
    }, (err) => {
      for (const w of group) w.reject(err);
    }).finally(() => {
      this.inFlight = false;
      this.send();
    });
  }
}
