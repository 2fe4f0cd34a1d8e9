// Top-ups end to end over HTTP: the dashboard's checkout form creates a Stripe Checkout Session
// (through the official package, against a local fake of Stripe's API), the balance moves only when
// a correctly signed webhook confirms the payment, and exactly once however deliveries arrive.
import t from 'tap';
import Database from 'better-sqlite3';
import { openStore } from '../../lib/store/index.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { checkInvariants } from '../helpers/invariants.js';
import { DashboardClient } from './client.js';
import { deliver, startFakeStripe, stripeConfig, type FakeStripe } from './fake-stripe.js';

const USD = 1_000_000_000;
let fake: FakeStripe;
let gw: TestGateway;
let n = 0;
/** The gateway's log lines. */
const logged: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];

t.before(async () => {
  fake = await startFakeStripe();
  gw = await startGateway({
    creditUsd: 0,
    configure: (c) => { c.stripe = stripeConfig(fake, { stablecoin: true }); },
    log: (level, msg, fields) => void logged.push({ level, msg, fields }),
  });
});
t.teardown(async () => {
  await gw.close();
  await fake.close();
});

/** A new account that started a top-up: the browser is now on Stripe's page. */
async function startTopUp(amountUsd: number, method: 'card' | 'stablecoin' = 'card') {
  const email = `payer${++n}@example.com`;
  const client = await DashboardClient.signUp(gw.url, email);
  const accountId = (await gw.store.accounts.byEmail(email))!.id;
  await client.get('/dashboard/credits');
  const r = await client.post('/dashboard/credits/checkout', { amount: String(amountUsd * USD), method });
  if (r.status !== 303 || !r.location) throw new Error(`checkout answered ${r.status}`);
  const sessionId = r.location.split('/').at(-1)!;
  return { client, accountId, sessionId, location: r.location };
}

const balance = async (accountId: number) => (await gw.store.ledger.balance(accountId)).balance;

t.test('a card top-up stays pending until Stripe confirms it, then credits the balance once', async (t) => {
  const { client, accountId, sessionId, location } = await startTopUp(10);
  t.equal(location, `${fake.url}/pay/${sessionId}`, 'the payer is sent to the Checkout page');
  const sent = fake.created.at(-1)!;
  t.equal(sent.mode, 'payment');
  t.equal(sent['allowed_payment_method_types[0]'], 'card');
  t.equal(sent['line_items[0][price_data][unit_amount]'], '1000', '$10 in cents');
  t.equal(sent['line_items[0][price_data][currency]'], 'usd');
  t.equal(sent.success_url, `${gw.url}/dashboard/credits?payment=success`);
  t.equal(sent.client_reference_id, String(accountId));

  t.equal((await gw.store.payments.byRef(sessionId))?.status, 'pending');
  const back = await client.get('/dashboard/credits?payment=success');
  t.match(back.text, /being confirmed/, 'the return page says the payment is being confirmed');
  t.match(back.text, /data-testid="payment-status">Pending</);
  t.equal(await balance(accountId), 0, 'coming back from Stripe credits nothing');

  const r = await deliver(gw.url, fake.event(sessionId, 'checkout.session.completed'));
  t.same([r.status, r.body.outcome], [200, 'credited']);
  t.equal(await balance(accountId), 10 * USD, 'the running gateway sees the credit');
  const page = await client.get('/dashboard/credits');
  t.match(page.text, /data-testid="balance">\$10\.00</);
  t.match(page.text, /data-testid="payment-status">Confirmed</);
  t.same(await checkInvariants(gw.store), []);
});

t.test('stablecoin uses Stripe\'s crypto payment method; amounts not offered are refused', async (t) => {
  const { sessionId } = await startTopUp(25, 'stablecoin');
  t.equal(fake.created.at(-1)!['allowed_payment_method_types[0]'], 'crypto');
  t.equal((await gw.store.payments.byRef(sessionId))?.method, 'stablecoin');

  const client = await DashboardClient.signUp(gw.url, `odd${++n}@example.com`);
  await client.get('/dashboard/credits');
  const before = fake.created.length;
  const r = await client.post('/dashboard/credits/checkout', { amount: String(7 * USD), method: 'card' });
  t.equal(r.status, 400);
  t.match(r.text, /Choose one of the amounts/);
  const r2 = await client.post('/dashboard/credits/checkout', { amount: String(10 * USD), method: 'paypal' });
  t.equal(r2.status, 400);
  t.equal(fake.created.length, before, 'Stripe was not called');
});

t.test('deliveries that fail verification are refused with 400 and credit nothing', async (t) => {
  const { accountId, sessionId } = await startTopUp(10);
  const now = Math.floor(Date.now() / 1000);
  const good = fake.event(sessionId, 'checkout.session.completed');
  const cases: [string, { body: string; signature: string }][] = [
    ['signed with another secret', fake.event(sessionId, 'checkout.session.completed', { secret: 'whsec_not_ours' })],
    ['altered body', { body: good.body.replace('"amount_total": 1000', '"amount_total": 100000'), signature: good.signature }],
    ['body with a byte added', { body: good.body + ' ', signature: good.signature }],
    ['stale timestamp (10 minutes old)', fake.event(sessionId, 'checkout.session.completed', { timestamp: now - 600 })],
    ['no signature', { body: good.body, signature: '' }],
    ['garbage signature', { body: good.body, signature: 't=1,v1=deadbeef' }],
  ];
  t.not(cases[1][1].body, good.body, 'the altered body differs');
  for (const [name, d] of cases) {
    const r = await deliver(gw.url, d);
    t.equal(r.status, 400, name);
  }
  t.equal(await balance(accountId), 0);
  t.equal((await gw.store.payments.byRef(sessionId))?.status, 'pending');
  t.equal((await deliver(gw.url, good)).status, 200, 'the genuine delivery still works');
  t.equal(await balance(accountId), 10 * USD);
  t.same(await checkInvariants(gw.store), []);
});

t.test('the same event 10 times at once, replays and out-of-order events: exactly one credit', async (t) => {
  const { accountId, sessionId } = await startTopUp(50);
  const event = fake.event(sessionId, 'checkout.session.completed', { eventId: 'evt_same' });
  const results = await Promise.all(Array.from({ length: 10 }, () => deliver(gw.url, event)));
  t.same(results.map((r) => r.status), Array(10).fill(200), 'every delivery is acknowledged');
  t.equal(results.filter((r) => r.body.outcome === 'credited').length, 1, 'one of them credited');
  t.equal(await balance(accountId), 50 * USD);

  const later = await Promise.all([
    deliver(gw.url, event), // a replay of the same delivery
    deliver(gw.url, fake.event(sessionId, 'checkout.session.async_payment_succeeded')),
    deliver(gw.url, fake.event(sessionId, 'checkout.session.async_payment_failed')),
    deliver(gw.url, fake.event(sessionId, 'checkout.session.expired')),
    deliver(gw.url, fake.event(sessionId, 'checkout.session.completed', { eventId: 'evt_other' })),
  ]);
  t.same(later.map((r) => r.status), [200, 200, 200, 200, 200]);
  t.same(later.slice(2, 4).map((r) => r.body.outcome), ['already confirmed', 'already confirmed'], 'a late failure or expiry is not reported as failed');
  t.equal(await balance(accountId), 50 * USD, 'still one credit');
  t.equal((await gw.store.payments.byRef(sessionId))?.status, 'confirmed', 'a late failure does not undo the confirmation');
  const db = new Database(gw.dbPath, { readonly: true });
  t.teardown(() => db.close());
  const pid = (await gw.store.payments.byRef(sessionId))!.id;
  t.equal(db.prepare(`SELECT COUNT(*) FROM journal WHERE payment_id = ? AND kind = 'topup'`).pluck().get(pid), 1, 'one journal entry');
  t.same(await checkInvariants(gw.store), []);
});

t.test('asynchronous payments: confirmed by async_payment_succeeded, failed by async_payment_failed', async (t) => {
  const slow = await startTopUp(10);
  const unpaid = await deliver(gw.url, fake.event(slow.sessionId, 'checkout.session.completed', { session: { payment_status: 'unpaid' } }));
  t.same([unpaid.status, unpaid.body.outcome], [200, 'awaiting payment']);
  t.equal((await gw.store.payments.byRef(slow.sessionId))?.status, 'pending');
  t.equal(await balance(slow.accountId), 0);
  await deliver(gw.url, fake.event(slow.sessionId, 'checkout.session.async_payment_succeeded'));
  t.equal(await balance(slow.accountId), 10 * USD);

  const failing = await startTopUp(25);
  await deliver(gw.url, fake.event(failing.sessionId, 'checkout.session.completed', { session: { payment_status: 'unpaid' } }));
  const f = await deliver(gw.url, fake.event(failing.sessionId, 'checkout.session.async_payment_failed'));
  t.same([f.status, f.body.outcome], [200, 'failed']);
  t.equal(await balance(failing.accountId), 0);
  const page = await failing.client.get('/dashboard/credits');
  t.match(page.text, /data-testid="payment-status">Failed</, 'the history shows it failed');

  const abandoned = await startTopUp(10);
  await deliver(gw.url, fake.event(abandoned.sessionId, 'checkout.session.expired'));
  t.equal((await gw.store.payments.byRef(abandoned.sessionId))?.status, 'failed', 'an expired checkout is a failed payment');
  t.same(await checkInvariants(gw.store), []);
});

t.test('a paid session whose payment row was lost is rebuilt from its metadata; a mismatched amount is not', async (t) => {
  const lost = await startTopUp(25);
  const db = new Database(gw.dbPath);
  t.teardown(() => db.close());
  db.prepare('DELETE FROM payments WHERE provider_ref = ?').run(lost.sessionId);
  const r = await deliver(gw.url, fake.event(lost.sessionId, 'checkout.session.completed'));
  t.same([r.status, r.body.outcome], [200, 'credited']);
  t.equal(await balance(lost.accountId), 25 * USD);

  const forged = await startTopUp(10);
  db.prepare('DELETE FROM payments WHERE provider_ref = ?').run(forged.sessionId);
  const m = await deliver(gw.url, fake.event(forged.sessionId, 'checkout.session.completed', { session: { amount_total: 500 } }));
  t.same([m.status, m.body.outcome], [200, 'unknown payment'], 'metadata says $10 but $5 was paid: no credit');
  t.equal(await balance(forged.accountId), 0);

  const foreign = await deliver(gw.url, fake.event('cs_test_not_ours', 'checkout.session.completed', { session: { metadata: {}, amount_total: 100, currency: 'usd' } }));
  t.same([foreign.status, foreign.body.outcome], [200, 'unknown payment'], 'a session another application started is acknowledged and ignored');
  t.same(await checkInvariants(gw.store), []);
});

t.test('a paid session naming an account this database lacks: acknowledged (no retries for days) and logged for the operator', async (t) => {
  const orphan = { metadata: { gateway_account: '987654', gateway_amount_nano: String(10 * USD), gateway_method: 'card' }, amount_total: 1000, currency: 'usd' };
  const event = fake.event('cs_test_orphan', 'checkout.session.completed', { eventId: 'evt_orphan', session: orphan });
  const r = await deliver(gw.url, event);
  t.same([r.status, r.body.outcome], [200, 'unknown account']);
  t.match(logged.filter((l) => l.fields?.event === 'evt_orphan'), [
    { level: 'error', msg: /not credited.*by hand/, fields: { session: 'cs_test_orphan', account: '987654', amount_usd: 10, currency: 'usd' } },
  ]);
  t.equal(await gw.store.payments.byRef('cs_test_orphan'), null, 'nothing recorded, nothing credited');
  t.same(await checkInvariants(gw.store), []);
});

t.test('credit granted from the command line (another process) shows on the next page', async (t) => {
  const email = `granted${++n}@example.com`;
  const client = await DashboardClient.signUp(gw.url, email);
  const cli = openStore(gw.config); // what `gateway credits grant` does: its own connection to the file
  await cli.ledger.grant((await cli.accounts.byEmail(email))!.id, 3 * USD, 'support');
  await cli.close();
  t.match((await client.get('/dashboard/credits')).text, /data-testid="balance">\$3\.00</);
});

t.test('the webhook takes POST only; without a stripe section there are no payments', async (t) => {
  const get = await fetch(`${gw.url}/webhooks/stripe`);
  t.equal(get.status, 405);
  const other = await fetch(`${gw.url}/webhooks/other`, { method: 'POST', body: '{}' });
  t.equal(other.status, 404);

  const plain = await startGateway({ creditUsd: 0 });
  t.teardown(() => plain.close());
  const client = await DashboardClient.signUp(plain.url, 'nostripe@example.com');
  const page = await client.get('/dashboard/credits');
  t.match(page.text, /Payments are not enabled on this gateway/);
  t.notMatch(page.text, /Continue to payment/);
  const post = await client.post('/dashboard/credits/checkout', { amount: String(10 * USD), method: 'card' });
  t.equal(post.status, 404);
  const hook = await fetch(`${plain.url}/webhooks/stripe`, { method: 'POST', headers: { 'stripe-signature': 't=1,v1=x' }, body: '{}' });
  t.equal(hook.status, 404);
});

t.test('coming back from cancelling expires the Checkout Session at Stripe and shows the payment cancelled', async (t) => {
  const { client, sessionId } = await startTopUp(25);
  const cancelUrl = fake.sessions.get(sessionId)!.cancel_url;
  t.equal(cancelUrl, `${gw.url}/dashboard/credits?payment=cancelled&session=${sessionId}`, 'the cancel address names the session (Stripe fills it in)');
  const back = await client.get(cancelUrl.slice(gw.url.length));
  t.same([back.status, back.location], [303, '/dashboard/credits?payment=cancelled'], 'then the page without the session: a reload does nothing more');
  t.same(fake.expired, [sessionId], 'the gateway asked Stripe to expire it');
  t.equal(fake.sessions.get(sessionId)!.status, 'expired');
  t.equal((await gw.store.payments.byRef(sessionId))?.status, 'cancelled');
  const page = await client.get(back.location!);
  t.match(page.text, /The payment was cancelled\. Nothing was charged\./);
  t.match(page.text, /data-testid="payment-status">Cancelled</);
  t.notMatch(page.text, />Pending</, 'not pending for a day');
  const expiry = await deliver(gw.url, fake.event(sessionId, 'checkout.session.expired'));
  t.same([expiry.status, expiry.body.outcome], [200, 'already cancelled'], 'Stripe\'s expiry event afterwards changes nothing');

  // Someone else's session in the address is not touched, nor is a paid one.
  const other = await startTopUp(10);
  const paid = await startTopUp(10);
  await deliver(gw.url, fake.event(paid.sessionId, 'checkout.session.completed'));
  await client.get(`/dashboard/credits?payment=cancelled&session=${other.sessionId}`);
  await paid.client.get(`/dashboard/credits?payment=cancelled&session=${paid.sessionId}`);
  t.same(fake.expired, [sessionId], 'no other expire call');
  t.equal((await gw.store.payments.byRef(other.sessionId))?.status, 'pending');
  t.equal((await gw.store.payments.byRef(paid.sessionId))?.status, 'confirmed');

  // Should Stripe ever send the address without filling in the session: the account's newest pending payment.
  const unfilled = await startTopUp(10);
  await unfilled.client.get('/dashboard/credits?payment=cancelled&session={CHECKOUT_SESSION_ID}');
  t.same(fake.expired, [sessionId, unfilled.sessionId], 'the newest pending session was expired');
  t.equal((await gw.store.payments.byRef(unfilled.sessionId))?.status, 'cancelled');
});

t.test('a failed payment says why, in Stripe\'s words (the PaymentIntent\'s last error)', async (t) => {
  const { client, sessionId } = await startTopUp(50, 'stablecoin');
  fake.intents.set('pi_declined', { id: 'pi_declined', object: 'payment_intent', status: 'requires_payment_method', last_payment_error: { type: 'card_error', code: 'card_declined', message: 'Your card has insufficient funds.' } });
  const r = await deliver(gw.url, fake.event(sessionId, 'checkout.session.async_payment_failed', { session: { payment_intent: 'pi_declined' } }));
  t.same([r.status, r.body.outcome], [200, 'failed']);
  const p = await gw.store.payments.byRef(sessionId);
  t.same([p?.status, p?.failureReason], ['failed', 'Your card has insufficient funds.']);
  const page = await client.get('/dashboard/credits');
  t.match(page.text, /data-testid="payment-status">Failed<\/span>\s*<div class="sub" data-testid="failure-reason">Your card has insufficient funds\.</);

  // Stripe gave no reason (or could not be asked): failed all the same, without one.
  const quiet = await startTopUp(10);
  const q = await deliver(gw.url, fake.event(quiet.sessionId, 'checkout.session.async_payment_failed', { session: { payment_intent: 'pi_unknown' } }));
  t.same([q.status, q.body.outcome], [200, 'failed']);
  t.equal((await gw.store.payments.byRef(quiet.sessionId))?.failureReason, null);
  t.ok(logged.some((l) => l.msg === 'could not read why a Stripe payment failed'), 'the missing reason is logged');
});

t.test('each confirmed payment has a receipt (amount, method, date, reference); nobody else can see it', async (t) => {
  const { client, sessionId } = await startTopUp(50);
  const pending = (await gw.store.payments.byRef(sessionId))!;
  t.equal((await client.get(`/dashboard/credits/receipts/${pending.id}`)).status, 404, 'no receipt before the payment is confirmed');
  await deliver(gw.url, fake.event(sessionId, 'checkout.session.completed'));
  const credits = await client.get('/dashboard/credits');
  t.match(credits.text, new RegExp(`href="/dashboard/credits/receipts/${pending.id}">Receipt<`), 'the payment links to its receipt');
  const receipt = await client.get(`/dashboard/credits/receipts/${pending.id}`);
  t.equal(receipt.status, 200);
  t.match(receipt.text, /data-testid="receipt-amount"><strong>\$50\.00</);
  t.match(receipt.text, /data-testid="receipt-method">Card, through Stripe</);
  t.match(receipt.text, /data-testid="receipt-date"><time datetime="\d{4}-\d\d-\d\dT[\d:.]+Z" data-local>\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/time>/);
  t.match(receipt.text, new RegExp(`data-testid="receipt-ref">${sessionId}<`));
  const stranger = await DashboardClient.signUp(gw.url, `stranger${++n}@example.com`);
  t.equal((await stranger.get(`/dashboard/credits/receipts/${pending.id}`)).status, 404, 'another account gets no receipt');
  t.equal((await client.get('/dashboard/credits/receipts/99999999')).status, 404);
});
