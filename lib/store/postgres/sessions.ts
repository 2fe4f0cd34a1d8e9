// Dashboard sessions and password reset links on PostgreSQL, shared by every node: a login on one
// node is valid on all.
import type { DashboardSession, PasswordResets, SessionSummary, Sessions } from '../types.js';
import { draftToken, hashSessionToken, toSessionSummary, type SessionSummaryRow } from '../rows.js';
import type { MonthClock } from '../month.js';
import type { Db } from './db.js';

export class PgSessions implements Sessions {
  constructor(private readonly db: Db, private readonly months: MonthClock) {}

  async create(accountId: number, ttlMs: number): Promise<{ token: string; expiresAt: number }> {
    const now = this.months.now();
    const { token, hash, expiresAt } = draftToken(now, ttlMs);
    await this.db.query('DELETE FROM dashboard_sessions WHERE expires_at <= $1', [now]);
    await this.db.query('INSERT INTO dashboard_sessions (token_hash, account_id, created_at, expires_at) VALUES ($1, $2, $3, $4)',
      [hash, accountId, now, expiresAt]);
    return { token, expiresAt };
  }

  async get(token: string): Promise<DashboardSession | null> {
    const r = await this.db.one<{ account_id: number; expires_at: number }>(
      'SELECT account_id, expires_at FROM dashboard_sessions WHERE token_hash = $1 AND expires_at > $2', [hashSessionToken(token), this.months.now()]);
    return r ? { accountId: r.account_id, expiresAt: r.expires_at } : null;
  }

  async end(token: string): Promise<void> {
    await this.db.query('DELETE FROM dashboard_sessions WHERE token_hash = $1', [hashSessionToken(token)]);
  }

  async listFor(accountId: number, currentToken?: string): Promise<SessionSummary[]> {
    const rows = await this.db.query<SessionSummaryRow>(`SELECT created_at, expires_at, token_hash = $1 AS current FROM dashboard_sessions
      WHERE account_id = $2 AND expires_at > $3 ORDER BY created_at DESC, current DESC`, [hashSessionToken(currentToken ?? ''), accountId, this.months.now()]);
    return rows.map(toSessionSummary);
  }

  async endOthers(accountId: number, keepToken: string): Promise<number> {
    const ended = await this.db.query('DELETE FROM dashboard_sessions WHERE account_id = $1 AND token_hash <> $2 RETURNING 1', [accountId, hashSessionToken(keepToken)]);
    return ended.length;
  }
}

export class PgPasswordResets implements PasswordResets {
  constructor(private readonly db: Db, private readonly months: MonthClock) {}

  async create(accountId: number, ttlMs: number): Promise<{ token: string; expiresAt: number }> {
    const now = this.months.now();
    const { token, hash, expiresAt } = draftToken(now, ttlMs);
    await this.db.transaction(async (tx) => {
      // Expired tokens and the account's earlier ones go: the newest link is the one that works.
      await tx.query('DELETE FROM password_resets WHERE expires_at <= $1 OR account_id = $2', [now, accountId]);
      await tx.query('INSERT INTO password_resets (token_hash, account_id, created_at, expires_at) VALUES ($1, $2, $3, $4)',
        [hash, accountId, now, expiresAt]);
    }, { durable: true });
    return { token, expiresAt };
  }

  async find(token: string): Promise<{ accountId: number; expiresAt: number } | null> {
    const r = await this.db.one<{ account_id: number; expires_at: number }>(
      'SELECT account_id, expires_at FROM password_resets WHERE token_hash = $1 AND expires_at > $2', [hashSessionToken(token), this.months.now()]);
    return r ? { accountId: r.account_id, expiresAt: r.expires_at } : null;
  }

  async consume(token: string): Promise<number | null> {
    // One DELETE: of two uses at once, the second waits for the first's row lock and then finds no row.
    const r = await this.db.one<{ account_id: number; expires_at: number }>(
      'DELETE FROM password_resets WHERE token_hash = $1 RETURNING account_id, expires_at', [hashSessionToken(token)]);
    return r && r.expires_at > this.months.now() ? r.account_id : null;
  }
}
