// Accounts on PostgreSQL: an email (unique, compared case-insensitively) and an optional dashboard password hash.
import type { Account, Accounts } from '../types.js';
import { StoreError } from '../types.js';
import { checkAccountPassword, hashSessionToken, normalEmail, toAccount, type AccountRow } from '../rows.js';
import { hashPassword } from '../password.js';
import type { MonthClock } from '../month.js';
import type { ChangeCounter } from './changes.js';
import { UNIQUE_VIOLATION, type Db } from './db.js';

export class PgAccounts implements Accounts {
  constructor(private readonly db: Db, private readonly changes: ChangeCounter, private readonly months: MonthClock) {}

  async create(input: { email: string; password?: string }): Promise<Account> {
    const email = normalEmail(input.email);
    const hash = input.password === undefined ? null : await hashPassword(input.password);
    const now = this.months.now();
    try {
      const r = await this.db.one<{ id: number }>('INSERT INTO accounts (email, password_hash, created_at) VALUES ($1, $2, $3) RETURNING id', [email, hash, now]);
      this.changes.bump();
      return { id: r!.id, email, createdAt: now, hasPassword: hash !== null };
    } catch (err) {
      if ((err as { code?: string }).code === UNIQUE_VIOLATION) throw new StoreError('conflict', `an account with email ${email} already exists`);
      throw err;
    }
  }

  private row(email: string): Promise<AccountRow | undefined> {
    return this.db.one<AccountRow>('SELECT * FROM accounts WHERE lower(email) = lower($1)', [email.trim()]);
  }

  async byEmail(email: string): Promise<Account | null> {
    const r = await this.row(email);
    return r ? toAccount(r) : null;
  }

  async byId(id: number): Promise<Account | null> {
    const r = await this.db.one<AccountRow>('SELECT * FROM accounts WHERE id = $1', [id]);
    return r ? toAccount(r) : null;
  }

  async count(): Promise<number> {
    return (await this.db.one<{ n: number }>('SELECT COUNT(*) AS n FROM accounts'))!.n;
  }

  async checkPassword(email: string, password: string): Promise<Account | null> {
    return checkAccountPassword(await this.row(email), password);
  }

  async setPassword(accountId: number, password: string, keepSession?: string): Promise<{ sessionsEnded: number }> {
    const hash = await hashPassword(password);
    const keep = keepSession === undefined ? null : hashSessionToken(keepSession);
    const sessionsEnded = await this.db.transaction(async (tx) => {
      const updated = await tx.query('UPDATE accounts SET password_hash = $1 WHERE id = $2 RETURNING id', [hash, accountId]);
      if (updated.length === 0) throw new StoreError('not_found', `no account with id ${accountId}`);
      return (await tx.query('DELETE FROM dashboard_sessions WHERE account_id = $1 AND token_hash IS DISTINCT FROM $2 RETURNING 1', [accountId, keep])).length;
    }, { durable: true });
    this.changes.bump();
    return { sessionsEnded };
  }
}
