// The dashboard in real headless Chromium: sign up, top up through a fake Stripe (balance changes
// only after the signed webhook), create a key and see it once, call the API with it through the
// official openai SDK, find the request by its x-request-id, change routing, revoke the key (401),
// a cross-site form post refused, accounts isolated. Screenshots of every page go to
// test/dashboard/screenshots/ for people to look at.
import t from 'tap';
import { existsSync, mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { HistoryRow } from '../../lib/store/types.js';
import { noonClock, startGateway, type TestGateway } from '../helpers/gateway.js';
import { CHROMIUM, launchChromium } from './chromium.js';
import { errorWith } from '../helpers/error-pattern.js';
import { checkInvariants } from '../helpers/invariants.js';
import { deliver, startFakeStripe, stripeConfig, type FakeStripe } from './fake-stripe.js';

const SHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const USD = 1_000_000_000;
const DAY = 86_400_000;

if (!existsSync(CHROMIUM)) {
  t.test('dashboard in headless Chromium', { skip: `SKIPPED the browser tests: no Chromium at ${CHROMIUM} (install it or set CHROMIUM_PATH)` }, () => {});
} else {
  await browserTests();
}

async function browserTests(): Promise<void> {
  let browser: Browser, fake: FakeStripe, gw: TestGateway;
  t.before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    fake = await startFakeStripe();
    // On a noon clock: no month turns between a request and the overview that shows its spend.
    gw = await startGateway({ creditUsd: 0, clock: noonClock().now, configure: (c) => { c.stripe = stripeConfig(fake, { stablecoin: true }); } });
    browser = await launchChromium();
  });
  t.teardown(async () => {
    await browser?.close();
    await gw?.close();
    await fake?.close();
  });

  async function newPage(): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, baseURL: gw.url });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: gw.url });
    const page = await context.newPage();
    page.setDefaultTimeout(5000);
    return { context, page };
  }
  const shot = (page: Page, name: string, fullPage = true) => page.screenshot({ path: `${SHOTS}${name}.png`, fullPage });
  const text = (page: Page, selector: string) => page.locator(selector).first().innerText();

  t.test('an owner signs up, tops up, makes a key, uses it, finds the request, revokes the key', async (t) => {
    const { context, page } = await newPage();
    t.teardown(() => context.close());

    await page.goto('/dashboard');
    t.match(page.url(), /\/dashboard\/login\?next=%2Fdashboard$/, 'anonymous visitors land on the login page');
    await shot(page, '01-login');
    await page.getByRole('link', { name: 'Create an account' }).click();
    await shot(page, '02-signup');
    await page.getByLabel('Email').fill('owner@example.com');
    await page.getByLabel('Password').fill('a long password');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL(/\/dashboard\?notice=welcome$/);
    t.equal(await text(page, '[data-testid=balance]'), '$0.00');
    await shot(page, '03-overview-new-account');
    const accountId = (await gw.store.accounts.byEmail('owner@example.com'))!.id;

    // Top up by card through the fake Stripe: the balance moves only when the webhook confirms it.
    await page.getByRole('link', { name: 'Credits' }).click();
    await page.getByRole('radio', { name: '$25.00' }).check();
    await page.getByRole('button', { name: 'Continue to payment' }).click();
    await page.waitForURL(`${fake.url}/pay/**`);
    const sessionId = page.url().split('/').at(-1)!;
    await page.getByRole('button', { name: 'Pay' }).click();
    await page.waitForURL(/\/dashboard\/credits\?payment=success$/);
    t.equal(await text(page, '[data-testid=balance]'), '$0.00', 'back from Stripe, not yet confirmed: no credit');
    t.equal(await text(page, '[data-testid=payment-status]'), 'Pending');
    await shot(page, '04-credits-pending');
    const hook = await deliver(gw.url, fake.event(sessionId, 'checkout.session.completed'));
    t.equal(hook.status, 200);
    await page.goto('/dashboard/credits');
    t.equal(await text(page, '[data-testid=balance]'), '$25.00', 'confirmed: credited');
    t.equal(await text(page, '[data-testid=payment-status]'), 'Confirmed');

    // A key, shown once, with a working copy button.
    await page.getByRole('link', { name: 'API Keys' }).click();
    await page.getByLabel('Name', { exact: true }).fill('my app');
    await page.getByLabel('Monthly limit, USD').fill('5');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.waitForURL(/\/dashboard\/keys\/\d+\/created$/);
    const key = await page.getByTestId('new-key').inputValue();
    t.match(key, /^sk-service-[A-Za-z0-9]{40}$/);
    await page.getByRole('button', { name: 'Copy' }).click();
    t.equal(await page.evaluate(() => navigator.clipboard.readText()), key, 'the copy button copies the key');
    await shot(page, '05-keys-created');
    await page.goto('/dashboard/keys');
    t.notOk((await page.content()).includes(key), 'the full key is never shown again');
    t.ok((await page.content()).includes(key.slice(0, 19)), 'its prefix is');

    // The API with the official SDK, then the request on the Requests page by its x-request-id.
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
    const { data, response } = await openai.chat.completions.create({ model: 'test/gpt', max_tokens: 50, messages: [{ role: 'user', content: 'Hello <<sim words=12>>' }] }).withResponse();
    t.equal(data.choices[0].finish_reason, 'stop');
    const requestId = response.headers.get('x-request-id')!;
    await gw.gateway.requestFinished(requestId);
    const row = (await gw.store.history.get(requestId))!;
    await page.getByRole('link', { name: 'Requests' }).click();
    await page.getByLabel('Request id').fill(requestId);
    await page.getByRole('button', { name: 'Apply' }).click();
    const found = page.locator(`tr[data-request-id="${requestId}"]`);
    t.equal(await found.count(), 1, 'found by its x-request-id');
    await found.getByRole('link').click();
    t.equal(await text(page, '[data-testid=request-id]'), requestId);
    t.equal(await text(page, '[data-testid=cost]'), `$${(row.costNano / USD).toFixed(9).replace(/0+$/, '').replace(/\.(\d)$/, '.$10')}`, 'the cost as charged');
    t.match(await page.locator('main').innerText(), /test\/gpt@sim-chat/, 'the serving offer');
    await shot(page, '06-request-detail');
    await page.goto('/dashboard');
    t.not(await text(page, '[data-testid=month-spend]'), '$0.00', 'the overview shows the month\'s spend');
    await shot(page, '07-overview-after-first-request');

    // Routing: deny a model; the Models page marks it not usable; the API refuses it.
    await page.getByRole('link', { name: 'Routing' }).click();
    await page.locator('input[name=allow][value="test/claude"]').uncheck();
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.waitForURL(/notice=saved/);
    t.equal(await page.locator('tr[data-model="test/claude"] [data-testid=not-usable]').innerText(), 'Denied in your routing settings');
    await page.getByRole('link', { name: 'Models' }).click();
    t.match(await page.locator('[data-model="test/claude"] .badge').innerText(), /Denied/);
    t.equal(await page.locator('[data-model="test/gpt"] .badge').innerText(), 'Usable');
    await t.rejects(openai.chat.completions.create({ model: 'test/claude', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }), errorWith({ status: 403 }));

    // A second key, then a cross-site form post against it from another site: refused.
    await page.goto('/dashboard/keys');
    await page.getByLabel('Name', { exact: true }).fill('second');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.waitForURL(/\/created$/);
    const second = (await gw.store.keys.list(accountId)).find((k) => k.name === 'second')!;
    const attacker = await attackerSite(`${gw.url}/dashboard/keys/${second.id}/revoke`);
    t.teardown(attacker.close);
    t.not(new URL(attacker.url).host, new URL(gw.url).host);
    const [refused] = await Promise.all([page.waitForResponse((r) => r.url().endsWith(`/keys/${second.id}/revoke`)), page.goto(attacker.url)]);
    t.equal(refused.status(), 403, 'the cross-site post is refused');
    t.match(await page.locator('body').innerText(), /another site|expired/);
    t.equal((await gw.store.keys.get(second.id))?.revokedAt, null, 'and the key is still active');

    // Revoke the first key, after a confirmation page: the API refuses it at once.
    await page.goto('/dashboard/keys');
    await page.locator('tr', { hasText: 'my app' }).getByRole('link', { name: 'Revoke' }).click();
    await shot(page, '08-revoke-confirm');
    await page.getByRole('button', { name: 'Revoke key' }).click();
    await page.waitForURL(/notice=revoked/);
    t.equal(await page.locator('tr', { hasText: 'my app' }).count(), 0, 'a revoked key is hidden');
    await page.getByRole('link', { name: 'Show 1 revoked key' }).click();
    t.match(await page.locator('tr', { hasText: 'my app' }).innerText(), /Revoked/);
    await shot(page, '09-keys-list');
    await t.rejects(openai.chat.completions.create({ model: 'test/gpt', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }), errorWith({ status: 401 }));

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(/\/dashboard\/login\?notice=logged-out$/);
    t.same(await checkInvariants(gw.store), []);
  });

  t.test('a busy account: pages with data, and no sight of another account', async (t) => {
    const other = (await gw.store.accounts.byEmail('owner@example.com'))!;
    const otherKeys = await gw.store.keys.list(other.id);
    const otherRequest = (await gw.store.history.list(other.id, { limit: 1 }))[0];
    await seedBusyAccount(gw);
    const { context, page } = await newPage();
    t.teardown(() => context.close());
    await page.goto('/dashboard/login');
    await page.getByLabel('Email').fill('busy@example.com');
    await page.getByLabel('Password').fill('busy password');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL(/\/dashboard$/);
    await shot(page, '10-overview-busy');
    for (const [path, name] of [['/dashboard/keys', '11-keys-busy'], ['/dashboard/credits', '12-credits-busy'], ['/dashboard/requests', '13-requests'],
      ['/dashboard/routing', '14-routing'], ['/dashboard/models', '15-models']] as const) {
      await page.goto(path);
      const html = await page.content();
      for (const k of otherKeys) t.notOk(html.includes(k.prefix), `${path}: no key of the other account`);
      t.notOk(html.includes(otherRequest.requestId), `${path}: no request of the other account`);
      t.notOk(html.includes('owner@example.com'), `${path}: not the other account's email`);
      await shot(page, name, name !== '13-requests'); // a page of 50 rows: its first screenful shows it
    }
    await page.goto('/dashboard/requests?status=error');
    t.ok(await page.locator('tr[data-request-id]').count() > 0);
    t.equal(await page.locator('tr[data-request-id] .badge-success').count(), 0, 'the status filter shows errors only');
    await page.locator('tr[data-request-id]').first().getByRole('link').click();
    await shot(page, '16-request-failover');
    const resp = await page.goto(`/dashboard/requests/${otherRequest.requestId}`);
    t.equal(resp?.status(), 404, 'another account\'s request is not found');
    await page.setViewportSize({ width: 420, height: 860 });
    await page.goto('/dashboard');
    await shot(page, '17-overview-narrow');
  });
}

/** A page on another site (localhost vs 127.0.0.1) that posts a form to `target` as soon as it loads. */
async function attackerSite(target: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<!doctype html><form id="f" method="post" action="${target}"><input name="csrf" value="guess"></form><script>document.getElementById('f').submit()</script>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://localhost:${(server.address() as AddressInfo).port}/`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** An account with a month of history, keys, payments and routing, for the screenshots. */
async function seedBusyAccount(gw: TestGateway): Promise<void> {
  const { store } = gw;
  const a = await store.accounts.create({ email: 'busy@example.com', password: 'busy password' });
  await store.ledger.grant(a.id, 20 * USD, 'welcome credit');
  for (const [ref, usd, method, end] of [['cs_seed_1', 50, 'card', 'confirm'], ['cs_seed_2', 25, 'stablecoin', 'confirm'], ['cs_seed_3', 10, 'card', 'fail'], ['cs_seed_4', 100, 'card', null]] as const) {
    await store.payments.create({ accountId: a.id, providerRef: ref, amountNano: usd * USD, method });
    if (end === 'confirm') await store.payments.confirm(ref);
    if (end === 'fail') await store.payments.fail(ref);
  }
  const prod = await store.keys.create({ accountId: a.id, name: 'production backend', monthlyLimitNano: 40 * USD });
  await store.keys.create({ accountId: a.id, name: 'staging', allowedModels: ['test/gpt'] });
  const old = await store.keys.create({ accountId: a.id, name: 'laptop (old)' });
  await store.keys.revoke(old.key.id);
  await store.routing.set(a.id, { priceCapOutput: 15_000 });

  // Real requests through the gateway, so the month's spend and the last-used times are genuine.
  const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: prod.secret, maxRetries: 0 });
  for (let i = 0; i < 6; i++) {
    const { response } = await openai.chat.completions.create({ model: i % 2 ? 'test/gpt' : 'test/claude', max_tokens: 300, messages: [{ role: 'user', content: `Question ${i} <<sim words=${40 + i * 30}>>` }] }).withResponse();
    await gw.gateway.requestFinished(response.headers.get('x-request-id')!);
  }
  // And a month of earlier history (history rows only: the chart's figures).
  const now = Date.now();
  let seq = 0;
  for (let d = 29; d >= 1; d--) {
    const perDay = Math.round(8 + 6 * Math.sin(d / 3) + (d % 7 === 0 ? -6 : 0));
    for (let i = 0; i < perDay; i++) {
      const failed = (d + i) % 11 === 0;
      const model = i % 3 === 0 ? 'test/claude' : 'test/gpt';
      const input = 400 + ((d * 37 + i * 91) % 1600), output = failed ? 0 : 80 + ((d * 13 + i * 29) % 700);
      const row: HistoryRow = {
        requestId: `req_01J${String(now - d * DAY).padStart(15, '0')}${String(++seq).padStart(8, '0')}`.slice(0, 30),
        time: now - d * DAY + i * 600_000, accountId: a.id, keyId: prod.key.id, route: 'chat', model,
        listing: failed ? null : `${model}@sim-${model === 'test/claude' ? 'messages' : 'chat'}`,
        attempts: failed
          ? [{ listing: `${model}@sim-messages`, outcome: 'failed', status: 529, reason: 'upstream 529', durationMs: 210 }, { listing: `${model}@sim-chat`, outcome: 'failed', reason: 'connect ECONNREFUSED', durationMs: 3 }]
          : [{ listing: `${model}@sim-${model === 'test/claude' ? 'messages' : 'chat'}`, outcome: 'ok', status: 200, durationMs: 300 + output }],
        status: failed ? 'error' : 'ok', httpStatus: failed ? 503 : 200, stream: i % 2 === 0,
        usage: { input, output, cacheRead: i % 4 === 0 ? 1200 : 0, cacheWrite: 0, cacheWrite1h: 0 },
        holdNano: 90_000_000, costNano: failed ? 0 : input * 3000 + output * 15000, latencyMs: 300 + output * 2, ttfbMs: failed ? null : 180,
        error: failed ? 'No offer could serve the request: upstream 529 (test/claude@sim-messages), connect ECONNREFUSED (test/claude@sim-chat)' : null,
      };
      store.history.record(row);
    }
  }
  await store.flush();
}
