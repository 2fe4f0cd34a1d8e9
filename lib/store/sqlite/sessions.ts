// Dashboard sessions: the browser holds a random token, the table its sha256 (see rows.ts).
import type { DashboardSession, Sessions } from '../types.js';
import { hashSessionToken, newSessionToken } from '../rows.js';
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
    };
  }

  async create(accountId: number, ttlMs: number): Promise<{ token: string; expiresAt: number }> {
    const now = this.months.now();
    const token = newSessionToken();
    const expiresAt = now + ttlMs;
    this.stmt.expire.run(now);
    this.stmt.insert.run(hashSessionToken(token), accountId, now, expiresAt);
    return { token, expiresAt };
  }

  async get(token: string): Promise<DashboardSession | null> {
    const r = this.stmt.get.get(hashSessionToken(token), this.months.now()) as { account_id: number; expires_at: number } | undefined;
    return r ? { accountId: r.account_id, expiresAt: r.expires_at } : null;
  }

  async end(token: string): Promise<void> {
    this.stmt.end.run(hashSessionToken(token));
  }
}
