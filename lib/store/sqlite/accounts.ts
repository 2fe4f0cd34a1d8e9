// Accounts: an email (unique, case-insensitive) and an optional dashboard password hash.
import type { Account, Accounts } from '../types.js';
import { StoreError } from '../types.js';
import { hashPassword } from '../password.js';
import { checkAccountPassword, hashSessionToken, normalEmail, toAccount, type AccountRow } from '../rows.js';
import type { ChangeWatcher } from './changes.js';
import type { MonthClock } from '../month.js';
import type { Db } from './open.js';

export class SqliteAccounts implements Accounts {
  private readonly stmt;

  constructor(db: Db, private readonly changes: ChangeWatcher, private readonly months: MonthClock) {
    this.stmt = {
      insert: db.prepare('INSERT INTO accounts (email, password_hash, created_at) VALUES (?, ?, ?)'),
      byEmail: db.prepare('SELECT * FROM accounts WHERE email = ?'),
      byId: db.prepare('SELECT * FROM accounts WHERE id = ?'),
      count: db.prepare('SELECT COUNT(*) FROM accounts').pluck(),
    };
    const setHash = db.prepare('UPDATE accounts SET password_hash = ? WHERE id = ?');
    // `IS NOT NULL` holds for every row: with no session to keep, all end.
    const endSessions = db.prepare('DELETE FROM dashboard_sessions WHERE account_id = ? AND token_hash IS NOT ?');
    this.replacePassword = db.transaction((id: number, hash: string, keep: Buffer | null) => {
      if (setHash.run(hash, id).changes === 0) throw new StoreError('not_found', `no account with id ${id}`);
      return endSessions.run(id, keep).changes;
    });
  }

  private readonly replacePassword: (id: number, hash: string, keep: Buffer | null) => number;

  async create(input: { email: string; password?: string }): Promise<Account> {
    const email = normalEmail(input.email);
    const hash = input.password === undefined ? null : await hashPassword(input.password);
    const now = this.months.now();
    try {
      const r = this.stmt.insert.run(email, hash, now);
      this.changes.bump();
      return { id: Number(r.lastInsertRowid), email, createdAt: now, hasPassword: hash !== null };
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') {
        throw new StoreError('conflict', `an account with email ${email} already exists`);
      }
      throw err;
    }
  }

  async byEmail(email: string): Promise<Account | null> {
    const r = this.stmt.byEmail.get(email.trim()) as AccountRow | undefined;
    return r ? toAccount(r) : null;
  }

  async byId(id: number): Promise<Account | null> {
    const r = this.stmt.byId.get(id) as AccountRow | undefined;
    return r ? toAccount(r) : null;
  }

  async count(): Promise<number> {
    return this.stmt.count.get() as number;
  }

  async checkPassword(email: string, password: string): Promise<Account | null> {
    return checkAccountPassword(this.stmt.byEmail.get(email.trim()) as AccountRow | undefined, password);
  }

  async setPassword(accountId: number, password: string, keepSession?: string): Promise<{ sessionsEnded: number }> {
    const keep = keepSession === undefined ? null : hashSessionToken(keepSession);
    const sessionsEnded = this.replacePassword(accountId, await hashPassword(password), keep);
    this.changes.bump();
    return { sessionsEnded };
  }
}
