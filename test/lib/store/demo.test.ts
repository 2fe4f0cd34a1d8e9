import t from 'tap';
import { ensureDemoAccount } from '../../../lib/store/demo.js';
import { hashApiKey, keyPrefix } from '../../../lib/store/api-key.js';
import { backends, freshStore } from './fixtures/store.js';

const demo = { enabled: true, email: 'demo@example.com', credit_usd: 2.5 };

backends(t, 'an empty database gets a demo account with credit and a key, once', async (t, backend) => {
  const { store } = await freshStore(t, backend);
  const made = await ensureDemoAccount(store, demo);
  const key = made?.key;
  t.match(key, /^sk-service-[A-Za-z0-9]{40}$/);
  t.ok(await store.accounts.checkPassword('demo@example.com', made!.password), 'the printed password logs in to the dashboard');
  const account = (await store.accounts.byEmail('demo@example.com'))!;
  t.equal((await store.ledger.balance(account.id)).balance, 2_500_000_000);
  const [cred] = await store.keys.findByPrefix(keyPrefix(key!));
  t.same(cred.hash, hashApiKey(key!));
  t.equal(await ensureDemoAccount(store, demo), null, 'not again');
});

backends(t, 'no demo account when disabled or when accounts exist', async (t, backend) => {
  const { store } = await freshStore(t, backend);
  t.equal(await ensureDemoAccount(store, { ...demo, enabled: false }), null);
  await store.accounts.create({ email: 'someone@example.com' });
  t.equal(await ensureDemoAccount(store, demo), null);
  t.equal(await store.accounts.count(), 1);
});
