// Dashboard sessions on PostgreSQL, shared by every node: a login on one node is valid on all.
import type { DashboardSession, Sessions } from '../types.js';
import { hashSessionToken, newSessionToken } from '../rows.js';
import type { MonthClock } from '../month.js';
import type { Db } from './db.js';

export class PgSessions implements Sessions {
  constructor(private readonly db: Db, private readonly months: MonthClock) {}

  async create(accountId: number, ttlMs: number): Promise<{ token: string; expiresAt: number }> {
    const now = this.months.now();
    const token = newSessionToken();
    const expiresAt = now + ttlMs;
    await this.db.query('DELETE FROM dashboard_sessions WHERE expires_at <= $1', [now]);
    await this.db.query('INSERT INTO dashboard_sessions (token_hash, account_id, created_at, expires_at) VALUES ($1, $2, $3, $4)',
      [hashSessionToken(token), accountId, now, expiresAt]);
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
}
