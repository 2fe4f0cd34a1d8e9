// Payments through a provider, on PostgreSQL. Confirmation and its credit are one durable
// transaction that first locks the payment's row: confirmations arriving at several nodes at once
// wait for each other, and only the first finds it pending; the journal's unique payment_id backs
// it up. So a payment is credited once however, and wherever, its confirmations arrive.
import type { NewPayment, Payment, Payments } from '../types.js';
import { StoreError } from '../types.js';
import { checkPaymentAmount, toPayment, type PaymentRow } from '../rows.js';
import type { MonthClock } from '../month.js';
import { FOREIGN_KEY_VIOLATION, UNIQUE_VIOLATION, type Db } from './db.js';
import type { PgLedger } from './ledger.js';

export class PgPayments implements Payments {
  constructor(private readonly db: Db, private readonly ledger: PgLedger, private readonly months: MonthClock) {}

  async create(input: NewPayment): Promise<Payment> {
    const { accountId, providerRef, amountNano, method } = input;
    checkPaymentAmount(amountNano);
    const now = this.months.now();
    try {
      const r = await this.db.one<{ id: number }>(`INSERT INTO payments (account_id, provider_ref, amount, method, status, created_at, updated_at)
        VALUES ($1, $2, $3, $4, 'pending', $5, $5) RETURNING id`, [accountId, providerRef, amountNano, method, now]);
      return { id: r!.id, accountId, providerRef, amountNano, method, status: 'pending', failureReason: null, createdAt: now, updatedAt: now };
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === UNIQUE_VIOLATION) throw new StoreError('conflict', `payment ${providerRef} exists`);
      if (code === FOREIGN_KEY_VIOLATION) throw new StoreError('not_found', `no account ${accountId}`);
      throw err;
    }
  }

  async byRef(providerRef: string): Promise<Payment | null> {
    const r = await this.db.one<PaymentRow>('SELECT * FROM payments WHERE provider_ref = $1', [providerRef]);
    return r ? toPayment(r) : null;
  }

  async byId(id: number): Promise<Payment | null> {
    const r = await this.db.one<PaymentRow>('SELECT * FROM payments WHERE id = $1', [id]);
    return r ? toPayment(r) : null;
  }

  async list(accountId: number, opts: { limit?: number } = {}): Promise<Payment[]> {
    return (await this.db.query<PaymentRow>('SELECT * FROM payments WHERE account_id = $1 ORDER BY id DESC LIMIT $2', [accountId, opts.limit ?? 20])).map(toPayment);
  }

  async confirm(providerRef: string): Promise<{ payment: Payment; credited: boolean } | null> {
    const seen: { payment?: Payment } = {};
    const entry = await this.ledger.postCredit(async (tx) => {
      const [r] = await tx.query<PaymentRow>('SELECT * FROM payments WHERE provider_ref = $1 FOR UPDATE', [providerRef]);
      if (!r) return null;
      seen.payment = toPayment(r);
      if (r.status === 'confirmed') return null;
      const now = this.months.now();
      await tx.query(`UPDATE payments SET status = 'confirmed', updated_at = $1 WHERE id = $2`, [now, r.id]);
      seen.payment = { ...seen.payment, status: 'confirmed', updatedAt: now };
      return { accountId: r.account_id, amountNano: r.amount, kind: 'topup', note: `payment ${providerRef}`, paymentId: r.id };
    });
    return seen.payment ? { payment: seen.payment, credited: entry !== null } : null;
  }

  async fail(providerRef: string, reason: string | null = null): Promise<Payment | null> {
    // Only a pending payment can fail: a late or out-of-order failure never undoes a confirmation.
    await this.db.query(`UPDATE payments SET status = 'failed', failure_reason = $1, updated_at = $2 WHERE provider_ref = $3 AND status = 'pending'`,
      [reason, this.months.now(), providerRef]);
    return this.byRef(providerRef);
  }

  async cancel(providerRef: string): Promise<Payment | null> {
    await this.db.query(`UPDATE payments SET status = 'cancelled', updated_at = $1 WHERE provider_ref = $2 AND status = 'pending'`, [this.months.now(), providerRef]);
    return this.byRef(providerRef);
  }
}
