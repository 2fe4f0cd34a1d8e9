// First run: an empty database with demo.enabled gets a demo account with credit, one key and a
// dashboard password.
import { randomBytes } from 'node:crypto';
import type { DemoConfig } from '../config-types.js';
import { parseUsd } from './money.js';
import type { Store } from './types.js';

export interface DemoAccount {
  key: string;
  /** The dashboard password (random; shown once like the key). */
  password: string;
}

/** The new demo credentials (to print once), or null when demo is off or the database already has accounts. */
export async function ensureDemoAccount(store: Store, demo: DemoConfig): Promise<DemoAccount | null> {
  if (!demo.enabled || (await store.accounts.count()) > 0) return null;
  const credit = parseUsd(String(demo.credit_usd));
  const password = randomBytes(12).toString('base64url');
  const account = await store.accounts.create({ email: demo.email, password });
  if (credit > 0) await store.ledger.grant(account.id, credit, 'demo credit');
  const { secret } = await store.keys.create({ accountId: account.id, name: 'demo' });
  return { key: secret, password };
}
