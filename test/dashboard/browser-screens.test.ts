// The dashboard in headless Chromium at a desktop (1280×800) and a phone (390×844) width, with
// long key names and model ids: no page scrolls sideways, axe-core finds no serious or critical
// issue on any page (Settings included), each Revoke names its key, a reload or Back after
// creating a key creates no other, and routing that leaves no model usable is never reported as
// a success. Screenshots go to test/dashboard/screenshots/ (screens-*) for people to look at.
import t, { type Test } from 'tap';
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { CHROMIUM, launchChromium } from './chromium.js';

const SHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const USD = 1_000_000_000;
const LONG_MODEL = 'acme-research/an-unusually-long-model-identifier-2026-11-preview-instruct-extended-context';
const LONG_NAME = 'production-backend-eu-west-1-billing-reconciliation-worker-with-a-very-long-name-indeed';
const WIDTHS = [{ label: 'desktop', width: 1280, height: 800 }, { label: 'phone', width: 390, height: 844 }] as const;

if (!existsSync(CHROMIUM)) {
  t.test('dashboard screens in headless Chromium', { skip: `SKIPPED the browser tests: no Chromium at ${CHROMIUM} (install it or set CHROMIUM_PATH)` }, () => {});
} else {
  await screenTests();
}

async function screenTests(): Promise<void> {
  let browser: Browser, gw: TestGateway;
  t.before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    gw = await startGateway({
      creditUsd: 0,
      configure: (c) => {
        c.models.push({ id: LONG_MODEL, display_name: 'Acme Research Unusually Long Preview Instruct Extended Context', context_window: 100000, max_output_tokens: 4096 });
        c.offers.push({ listing: `${LONG_MODEL}@sim-chat`, model: LONG_MODEL, provider: 'sim-chat', upstream_model: 'long-up', price: { input: 1, output: 2 } });
      },
    });
    browser = await launchChromium();
  });
  t.teardown(async () => {
    await browser?.close();
    await gw?.close();
  });

  let accounts = 0;
  /** A new account with long-named keys, logged in in a new browser context of that size. */
  async function loggedIn(t: Test, size: (typeof WIDTHS)[number]): Promise<{ page: Page; accountId: number }> {
    const email = `screens${++accounts}@example.com`;
    const a = await gw.store.accounts.create({ email, password: 'a long password' });
    await gw.store.ledger.grant(a.id, 20 * USD, 'test credit');
    const long = await gw.store.keys.create({ accountId: a.id, name: LONG_NAME, allowedModels: [LONG_MODEL, 'test/gpt'], monthlyLimitNano: 40 * USD });
    // A few requests of the long-named key and model, so that the data pages have rows to lay out.
    const now = Date.now();
    for (let i = 0; i < 5; i++) {
      gw.store.history.record({
        requestId: `req_screens${accounts}x${String(i).padStart(16, '0')}`, time: now - i * 60_000, accountId: a.id, keyId: long.key.id, route: 'chat',
        model: LONG_MODEL, listing: `${LONG_MODEL}@sim-chat`, attempts: [{ listing: `${LONG_MODEL}@sim-chat`, outcome: 'ok', status: 200, durationMs: 420 }],
        status: 'ok', httpStatus: 200, stream: false, usage: { input: 1200, output: 300, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 },
        holdNano: 90_000_000, costNano: 1_800_000, latencyMs: 420, ttfbMs: 180, error: null,
      });
    }
    await gw.store.flush();
    const capped = await gw.store.keys.create({ accountId: a.id, name: 'capped', monthlyLimitNano: USD / 20 });
    const hold = await gw.store.ledger.reserve({ accountId: a.id, keyId: capped.key.id, amount: USD / 20, monthlyLimitNano: USD / 20 });
    t.teardown(() => { if (hold.ok) gw.store.ledger.release(hold.hold.id); });
    const old = await gw.store.keys.create({ accountId: a.id, name: 'laptop (old)' });
    await gw.store.keys.revoke(old.key.id);
    // bypassCSP: only so that axe-core can be added to the page (the pages allow our own script only).
    const context = await browser.newContext({ viewport: size, baseURL: gw.url, bypassCSP: true });
    t.teardown(() => context.close());
    const page = await context.newPage();
    page.setDefaultTimeout(5000);
    for (const [path, name] of [['/dashboard/signup', 'signup'], ['/dashboard/login', 'login']]) {
      await page.goto(path);
      t.notOk(await scrollsSideways(page), `${path}: the page does not scroll sideways`);
      await page.screenshot({ path: `${SHOTS}screens-${size.label}-${name}.png`, fullPage: true });
      t.same(await seriousAxeIssues(page), [], `${path}: axe-core finds no serious or critical issue`);
    }
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('a long password');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL(/\/dashboard$/);
    return { page, accountId: a.id };
  }

  const scrollsSideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth > innerWidth);

  async function seriousAxeIssues(page: Page): Promise<string[]> {
    await page.addScriptTag({ path: AXE });
    const violations = await page.evaluate(async () => (await (window as any).axe.run(document, { resultTypes: ['violations'] })).violations as { id: string; impact: string; nodes: { target: string[] }[] }[]);
    return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }

  for (const size of WIDTHS) {
    t.test(`${size.label} (${size.width} px): no page scrolls sideways; every page passes axe-core`, async (t) => {
      const { page, accountId } = await loggedIn(t, size);
      const [longKey] = (await gw.store.keys.list(accountId)).filter((k) => k.name === LONG_NAME);
      const pages = [
        ['/dashboard', 'overview', true], ['/dashboard/keys', 'keys', true], ['/dashboard/keys?revoked=show', 'keys-revoked-shown', true],
        [`/dashboard/keys/${longKey.id}/edit`, 'key-edit', true], [`/dashboard/keys/${longKey.id}/revoke`, 'key-revoke', true],
        ['/dashboard/routing', 'routing', true], ['/dashboard/credits', 'credits', true], ['/dashboard/requests', 'requests', true], ['/dashboard/models', 'models', true],
        ['/dashboard/settings', 'settings', true],
      ] as const;
      for (const [path, name, axe] of pages) {
        await page.goto(path);
        t.notOk(await scrollsSideways(page), `${path}: the page does not scroll sideways`);
        await page.screenshot({ path: `${SHOTS}screens-${size.label}-${name}.png`, fullPage: true });
        if (axe) t.same(await seriousAxeIssues(page), [], `${path}: axe-core finds no serious or critical issue`);
      }

      await page.goto('/dashboard/keys');
      const revoke = page.getByRole('link', { name: `Revoke key “${LONG_NAME}”` });
      t.equal(await revoke.count(), 1, 'the Revoke of the long-named key is named after it for screen readers');
      t.equal(await page.getByRole('link', { name: 'Revoke key “capped”' }).count(), 1);
      t.equal(await page.getByRole('link', { name: /^Revoke$/ }).count(), 0, 'no Revoke without its key\'s name');
      const box = (await revoke.boundingBox())!;
      const nameBox = (await page.locator(`tr[data-key-id="${longKey.id}"] td.key-name`).boundingBox())!;
      t.ok(box.x + box.width <= size.width, 'the Revoke button is on screen');
      t.ok(nameBox.x >= 0 && nameBox.x + nameBox.width <= size.width, 'and so is the name it revokes');
      t.match(await page.locator('tr', { hasText: 'capped' }).innerText(), /Limit reached/, 'spend and holds at the limit');
    });
  }

  t.test('creating a key: post/redirect/get; a reload or Back creates no other key and shows the secret no more', async (t) => {
    const { page, accountId } = await loggedIn(t, WIDTHS[1]);
    await page.goto('/dashboard/keys');
    await page.getByLabel('Name', { exact: true }).fill('reloaded');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.waitForURL(/\/dashboard\/keys\/\d+\/created$/);
    const secret = await page.getByTestId('new-key').inputValue();
    t.match(secret, /^sk-service-[A-Za-z0-9]{40}$/);
    t.notOk(await scrollsSideways(page), 'the new key\'s page does not scroll sideways');
    t.same(await seriousAxeIssues(page), [], 'axe-core: the new key\'s page');
    await page.screenshot({ path: `${SHOTS}screens-phone-key-created.png`, fullPage: true });
    const count = async () => (await gw.store.keys.list(accountId)).filter((k) => k.name === 'reloaded').length;
    t.equal(await count(), 1);
    await page.reload();
    t.equal(await count(), 1, 'a reload creates no key');
    t.notOk((await page.content()).includes(secret), 'nor shows the secret again');
    t.match(await page.getByTestId('key-created').innerText(), /was shown once/);
    const back = await page.goBack();
    t.equal(back?.request().method(), 'GET', 'Back goes to the form page by GET: no resubmission');
    t.match(page.url(), /\/dashboard\/keys$/);
    t.equal(await count(), 1);
  });

  t.test('routing that blocks every model: the count as it changes, asked before saving, a warning after', async (t) => {
    const { page, accountId } = await loggedIn(t, WIDTHS[0]);
    await page.goto('/dashboard/routing');
    const countLine = page.getByTestId('usable-count');
    t.match(await countLine.innerText(), /^3 of 3 models are usable/);
    for (const box of await page.locator('input[name=allow]').all()) await box.uncheck();
    t.match(await countLine.innerText(), /^0 of 3 models would be usable/, 'the page says so before saving (with JavaScript)');
    await page.getByRole('button', { name: 'Save settings' }).click();
    t.match(await page.getByTestId('confirm-none').innerText(), /No model is usable under these settings/, 'and the server asks before saving');
    t.equal(await page.locator('.notice-success').count(), 0);
    t.same((await gw.store.routing.get(accountId)).deny, [], 'nothing saved yet');
    await page.screenshot({ path: `${SHOTS}screens-desktop-routing-confirm.png`, fullPage: true });
    await page.getByRole('button', { name: /Save anyway/ }).click();
    await page.waitForURL(/notice=saved/);
    t.equal(await page.locator('.notice-success').count(), 0, 'a block-all save is not reported as a success');
    t.match(await page.locator('.notice-warning').innerText(), /saved, but no model is usable under them/);
    t.match(await countLine.innerText(), /^0 of 3 models are usable/);
    await page.screenshot({ path: `${SHOTS}screens-desktop-routing-none-usable.png`, fullPage: true });
  });
}
