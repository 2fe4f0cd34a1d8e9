// Payments through a provider. Confirmation and its credit are one durable transaction: the status
// check, the status change and the top-up entry happen under SQLite's write lock, and the journal's
// unique payment_id backs it up, so a payment is credited once however its confirmations arrive.
import type { NewPayment, Payment, Payments } from '../types.js';
import { StoreError } from '../types.js';
import { checkPaymentAmount, toPayment, type PaymentRow } from '../rows.js';
import type { SqliteLedger } from './ledger.js';
import type { MonthClock } from '../month.js';
import type { Db } from './open.js';

export class SqlitePayments implements Payments {
  private readonly stmt;

  constructor(db: Db, private readonly ledger: SqliteLedger, private readonly months: MonthClock) {
    this.stmt = {
      insert: db.prepare(`INSERT INTO payments (account_id, provider_ref, amount, method, status, created_at, updated_at)
        VALUES (?, ?, ?, ?, 'pending', ?, ?)`),
      byRef: db.prepare('SELECT * FROM payments WHERE provider_ref = ?'),
      byId: db.prepare('SELECT * FROM payments WHERE id = ?'),
      list: db.prepare('SELECT * FROM payments WHERE account_id = ? ORDER BY id DESC LIMIT ?'),
      confirm: db.prepare(`UPDATE payments SET status = 'confirmed', updated_at = ? WHERE id = ?`),
      // Only a pending payment can fail: a late or out-of-order failure never undoes a confirmation.
      fail: db.prepare(`UPDATE payments SET status = 'failed', failure_reason = ?, updated_at = ? WHERE provider_ref = ? AND status = 'pending'`),
      cancel: db.prepare(`UPDATE payments SET status = 'cancelled', updated_at = ? WHERE provider_ref = ? AND status = 'pending'`),
    };
  }

  async create(input: NewPayment): Promise<Payment> {
    const { accountId, providerRef, amountNano, method } = input;
    checkPaymentAmount(amountNano);
    const now = this.months.now();
    try {
      const r = this.stmt.insert.run(accountId, providerRef, amountNano, method, now, now);
      return { id: Number(r.lastInsertRowid), accountId, providerRef, amountNano, method, status: 'pending', failureReason: null, createdAt: now, updatedAt: now };
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'SQLITE_CONSTRAINT_UNIQUE') throw new StoreError('conflict', `payment ${providerRef} exists`);
      if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY') throw new StoreError('not_found', `no account ${accountId}`);
      throw err;
    }
  }

  async byRef(providerRef: string): Promise<Payment | null> {
    const r = this.stmt.byRef.get(providerRef) as PaymentRow | undefined;
    return r ? toPayment(r) : null;
  }

  async byId(id: number): Promise<Payment | null> {
    const r = this.stmt.byId.get(id) as PaymentRow | undefined;
    return r ? toPayment(r) : null;
  }

  async list(accountId: number, opts: { limit?: number } = {}): Promise<Payment[]> {
    return (this.stmt.list.all(accountId, opts.limit ?? 20) as PaymentRow[]).map(toPayment);
  }

  async confirm(providerRef: string): Promise<{ payment: Payment; credited: boolean } | null> {
    const seen: { payment?: Payment } = {};
    const entry = this.ledger.postCredit(() => {
      const r = this.stmt.byRef.get(providerRef) as PaymentRow | undefined;
      if (!r) return null;
      seen.payment = toPayment(r);
      if (r.status === 'confirmed') return null;
      const now = this.months.now();
      this.stmt.confirm.run(now, r.id);
      seen.payment = { ...seen.payment, status: 'confirmed', updatedAt: now };
      return { accountId: r.account_id, amountNano: r.amount, kind: 'topup', note: `payment ${providerRef}`, paymentId: r.id };
    });
    return seen.payment ? { payment: seen.payment, credited: entry !== null } : null;
  }

  async fail(providerRef: string, reason: string | null = null): Promise<Payment | null> {
    this.stmt.fail.run(reason, this.months.now(), providerRef);
    return this.byRef(providerRef);
  }

  async cancel(providerRef: string): Promise<Payment | null> {
    this.stmt.cancel.run(this.months.now(), providerRef);
    return this.byRef(providerRef);
  }
}
