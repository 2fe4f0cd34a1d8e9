// Stripe webhooks on PostgreSQL nodes: the same signed event delivered to two `gateway serve`
// processes at once (and twice to each) credits the payment once; a delivery while the database is
// away is a 503 with Retry-After (not a 500: nothing is wrong with the gateway, and Stripe retries),
// and the retry once it is back credits it.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../lib/log.js';
import { openPostgresStore } from '../../lib/store/postgres/store.js';
import { deliver, startFakeStripe, stripeConfig } from '../dashboard/fake-stripe.js';
import { startGateway } from '../helpers/gateway.js';
import { checkInvariants } from '../helpers/invariants.js';
import { freshPostgresUrl, postgresSkip } from '../helpers/postgres.js';
import { serveProcess, writeDemoConfig } from '../helpers/process.js';
import { openSql } from '../helpers/sql.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

const skip = await postgresSkip();
const USD = 1_000_000_000;

const fake = await startFakeStripe();
t.teardown(() => fake.close());
const dir = mkdtempSync(join(tmpdir(), 'gw-webhooks-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** The journal's top-up credits of a payment, and the account's balance, read from the database. */
async function credits(url: string, providerRef: string, accountId: number) {
  const db = await openSql(url, { readonly: true });
  try {
    const credits = await db.value(`SELECT COUNT(*)::int FROM journal j JOIN payments p ON p.id = j.payment_id WHERE p.provider_ref = ?`, providerRef);
    const balance = Number(await db.value('SELECT COALESCE((SELECT balance FROM balances WHERE account_id = ?), 0)', accountId));
    return { credits, balance };
  } finally {
    await db.close();
  }
}

t.test('one signed event delivered to two gateway processes at once, and twice to each: one credit, every delivery 2xx', { skip }, async (t) => {
  const url = await freshPostgresUrl();
  const config = writeDemoConfig(dir, 'unused@example.com', 1, (c) => {
    c.demo = { enabled: false };
    c.storage = { postgres: url, commit_interval_ms: 2 };
    c.stripe = stripeConfig(fake);
  });
  // The account and its pending payment, as the dashboard's checkout records them on whichever node.
  const setup = openPostgresStore({ url, commitIntervalMs: 2, clock: Date.now, log: silentLogger });
  const account = await setup.accounts.create({ email: 'payer@example.com' });
  await setup.ledger.grant(account.id, 1 * USD, 'starting credit');
  await setup.payments.create({ accountId: account.id, providerRef: 'cs_test_twonodes', amountNano: 10 * USD, method: 'card' });
  // A second payment the nodes did not get to record: each rebuilds it from the session's metadata.
  const metadata = { gateway_account: String(account.id), gateway_amount_nano: String(25 * USD), gateway_method: 'card' };
  await setup.flush();
  await setup.close();

  const nodes = await Promise.all([serveProcess(config), serveProcess(config)]);
  t.teardown(() => nodes.forEach((n) => n.child.kill('SIGKILL')));

  const recorded = fake.event('cs_test_twonodes', 'checkout.session.completed');
  const fromMetadata = fake.event('cs_test_metadata', 'checkout.session.completed', { session: { metadata, currency: 'usd', amount_total: 2500 } });
  for (const [what, event, amount] of [['a recorded payment', recorded, 10 * USD], ['a payment rebuilt from metadata', fromMetadata, 25 * USD]] as const) {
    const before = await credits(url, JSON.parse(event.body).data.object.id, account.id);
    // A, B, A, B at once: Stripe's retries may overlap its first delivery, and a load balancer spreads them.
    const answers = await Promise.all([0, 1, 0, 1].map((i) => deliver(nodes[i].url, event)));
    t.same(answers.map((a) => a.status), [200, 200, 200, 200], `${what}: every delivery answered 200`);
    t.same(answers.map((a) => a.body.outcome).sort(), ['already credited', 'already credited', 'already credited', 'credited'], `${what}: credited by exactly one delivery`);
    const after = await credits(url, JSON.parse(event.body).data.object.id, account.id);
    t.same([before.credits, after.credits], [0, 1], `${what}: one journal credit`);
    t.equal(after.balance - before.balance, amount, `${what}: the balance rose once, by the payment`);
  }
  t.same(await checkInvariants(url), [], 'invariants hold (one credit per confirmed payment)');
});

t.test('a webhook while the database is away: 503 with Retry-After, nothing credited; the retry once it is back credits it', { skip }, async (t) => {
  const relay = await startTcpProxy({ host: '127.0.0.1', port: 5432 });
  t.teardown(() => relay.close());
  const url = (await freshPostgresUrl()).replace(/\/\/([^@/]*@)?[^/]+\//, `//$1127.0.0.1:${relay.port}/`);
  const gw = await startGateway({ creditUsd: 0, configure: (c) => void ((c.storage = { postgres: url, commit_interval_ms: 2 }), (c.stripe = stripeConfig(fake))) });
  t.teardown(() => gw.close());
  await gw.store.payments.create({ accountId: gw.accountId, providerRef: 'cs_test_outage', amountNano: 10 * USD, method: 'card' });
  const event = fake.event('cs_test_outage', 'checkout.session.completed');

  relay.cut();
  const refused = await fetch(`${gw.url}/webhooks/stripe`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': event.signature }, body: event.body });
  t.equal(refused.status, 503, 'refused while the database is away: 503, not 500');
  t.ok(Number(refused.headers.get('retry-after')) > 0, 'with Retry-After');
  t.match(await refused.json(), { error: /unavailable/ });
  relay.restore();

  const retried = await deliver(gw.url, event);
  t.same([retried.status, retried.body.outcome], [200, 'credited'], 'Stripe\'s retry credits it');
  t.equal((await gw.store.ledger.balance(gw.accountId)).balance, 10 * USD, 'once');
  t.same(await checkInvariants(gw.store), []);
});
