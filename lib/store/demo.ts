// First run: an empty database with demo.enabled gets a demo account with credit and one key.
import type { DemoConfig } from '../config-types.js';
import { parseUsd } from './money.js';
import type { Store } from './types.js';

/** The new demo key (to print once), or null when demo is off or the database already has accounts. */
export async function ensureDemoAccount(store: Store, demo: DemoConfig): Promise<string | null> {
  if (!demo.enabled || (await store.accounts.count()) > 0) return null;
  const credit = parseUsd(String(demo.credit_usd));
  const account = await store.accounts.create({ email: demo.email });
  if (credit > 0) await store.ledger.grant(account.id, credit, 'demo credit');
  const { secret } = await store.keys.create({ accountId: account.id, name: 'demo' });
  return secret;
}
