// Dashboard sessions and password reset links: the browser holds a random token, the table its
// sha256 (see rows.ts).
import type { DashboardSession, PasswordResets, SessionSummary, Sessions } from '../types.js';
import { draftToken, hashSessionToken, toSessionSummary, type SessionSummaryRow } from '../rows.js';
import type { MonthClock } from '../month.js';
import type { Db } from './open.js';

export class SqliteSessions implements Sessions {
  private readonly stmt;

  constructor(db: Db, private readonly months: MonthClock) {
    this.stmt = {
      insert: db.prepare('INSERT INTO dashboard_sessions (token_hash, account_id, created_at, expires_at) VALUES (?, ?, ?, ?)'),
      get: db.prepare('SELECT account_id, expires_at FROM dashboard_sessions WHERE token_hash = ? AND expires_at > ?'),
      end: db.prepare('DELETE FROM dashboard_sessions WHERE token_hash = ?'),
      expire: db.prepare('DELETE FROM dashboard_sessions WHERE expires_at <= ?'),
      listFor: db.prepare(`SELECT created_at, expires_at, token_hash = ? AS current FROM dashboard_sessions
        WHERE account_id = ? AND expires_at > ? ORDER BY created_at DESC, current DESC`),
      endOthers: db.prepare('DELETE FROM dashboard_sessions WHERE account_id = ? AND token_hash <> ?'),
    };
  }

  async create(accountId: number, ttlMs: number): Promise<{ token: string; expiresAt: number }> {
    const now = this.months.now();
    const { token, hash, expiresAt } = draftToken(now, ttlMs);
    this.stmt.expire.run(now);
    this.stmt.insert.run(hash, accountId, now, expiresAt);
    return { token, expiresAt };
  }

  async get(token: string): Promise<DashboardSession | null> {
    const r = this.stmt.get.get(hashSessionToken(token), this.months.now()) as { account_id: number; expires_at: number } | undefined;
    return r ? { accountId: r.account_id, expiresAt: r.expires_at } : null;
  }

  async end(token: string): Promise<void> {
    this.stmt.end.run(hashSessionToken(token));
  }

  async listFor(accountId: number, currentToken?: string): Promise<SessionSummary[]> {
    const rows = this.stmt.listFor.all(hashSessionToken(currentToken ?? ''), accountId, this.months.now()) as SessionSummaryRow[];
    return rows.map(toSessionSummary);
  }

  async endOthers(accountId: number, keepToken: string): Promise<number> {
    return this.stmt.endOthers.run(accountId, hashSessionToken(keepToken)).changes;
  }
}

export class SqlitePasswordResets implements PasswordResets {
  private readonly stmt;

  constructor(db: Db, private readonly months: MonthClock) {
    this.stmt = {
      // Expired tokens and the account's earlier ones go: the newest link is the one that works.
      prune: db.prepare('DELETE FROM password_resets WHERE expires_at <= ? OR account_id = ?'),
      insert: db.prepare('INSERT INTO password_resets (token_hash, account_id, created_at, expires_at) VALUES (?, ?, ?, ?)'),
      find: db.prepare('SELECT account_id, expires_at FROM password_resets WHERE token_hash = ? AND expires_at > ?'),
      // One statement, so two uses at once (even from two processes) cannot both get the row.
      consume: db.prepare('DELETE FROM password_resets WHERE token_hash = ? RETURNING account_id, expires_at'),
    };
  }

  async create(accountId: number, ttlMs: number): Promise<{ token: string; expiresAt: number }> {
    const now = this.months.now();
    const { token, hash, expiresAt } = draftToken(now, ttlMs);
    this.stmt.prune.run(now, accountId);
    this.stmt.insert.run(hash, accountId, now, expiresAt);
    return { token, expiresAt };
  }

  async find(token: string): Promise<{ accountId: number; expiresAt: number } | null> {
    const r = this.stmt.find.get(hashSessionToken(token), this.months.now()) as { account_id: number; expires_at: number } | undefined;
    return r ? { accountId: r.account_id, expiresAt: r.expires_at } : null;
  }

  async consume(token: string): Promise<number | null> {
    const r = this.stmt.consume.get(hashSessionToken(token)) as { account_id: number; expires_at: number } | undefined;
    return r && r.expires_at > this.months.now() ? r.account_id : null;
  }
}
