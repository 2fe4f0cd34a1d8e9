// Credits in headless Chromium at a desktop (1280×800) and a phone (390×844) width: the ledger's
// lines add up to the balance shown (grants, a card top-up, an adjustment, charges over several
// UTC days), a checkout cancelled on Stripe's page is expired there and shows as cancelled, a failed
// payment shows Stripe's reason, each confirmed payment has a receipt, money has thousands
// separators and sub-cent amounts two significant digits, and no page scrolls sideways.
// Screenshots go to test/dashboard/screenshots/ (credits-*) for people to look at.
import t, { type Test } from 'tap';
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { openSql } from '../helpers/sql.js';
import { noonClock, startGateway, type TestGateway } from '../helpers/gateway.js';
import { CHROMIUM, launchChromium } from './chromium.js';
import { deliver, startFakeStripe, stripeConfig, type FakeStripe } from './fake-stripe.js';

const SHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const USD = 1_000_000_000;
const DAY = 86_400_000;
const WIDTHS = [{ label: 'desktop', width: 1280, height: 800 }, { label: 'phone', width: 390, height: 844 }] as const;

/** "-$1,234.000135" → -1234000135000n nano-USD, exactly. */
function nano(text: string): bigint {
  const m = /^(-|−)?\$([\d,]+)\.(\d+)$/.exec(text.trim());
  if (!m) throw new Error(`not an amount: ${JSON.stringify(text)}`);
  const value = BigInt(m[2].replaceAll(',', '')) * 1_000_000_000n + BigInt(m[3].padEnd(9, '0'));
  return m[1] ? -value : value;
}

if (!existsSync(CHROMIUM)) {
  t.test('credits in headless Chromium', { skip: `SKIPPED the browser tests: no Chromium at ${CHROMIUM} (install it or set CHROMIUM_PATH)` }, () => {});
} else {
  await creditTests();
}

async function creditTests(): Promise<void> {
  let browser: Browser, gw: TestGateway, fake: FakeStripe;
  // "A minute ago" and the seeded days never cross a midnight (they did once, when CI ran at 00:00 UTC).
  const { noon, now } = noonClock();
  /** The gateway's clock runs this far behind `now` while charges of earlier days are made. */
  let offset = 0;
  t.before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    fake = await startFakeStripe();
    gw = await startGateway({ creditUsd: 0, clock: () => now() - offset, configure: (c) => {
      c.stripe = stripeConfig(fake, { stablecoin: true });
      c.providers.find((p: { id: string }) => p.id === 'sim-chat').display_name = 'Simulated Chat Co.';
    } });
    browser = await launchChromium();
  });
  t.teardown(async () => {
    await browser?.close();
    await gw?.close();
    await fake?.close();
  });

  let accounts = 0;
  /** An account with every kind of movement, logged in in a new browser context of that size. */
  async function withHistory(t: Test, size: { width: number; height: number }): Promise<{ page: Page; accountId: number }> {
    const email = `ledger${++accounts}@example.com`;
    const a = await gw.store.accounts.create({ email, password: 'a long password' });
    const { key } = await gw.store.keys.create({ accountId: a.id, name: 'backend' });
    const charge = async (amount: number) => {
      const r = await gw.store.ledger.reserve({ accountId: a.id, keyId: key.id, amount, monthlyLimitNano: null });
      if (!r.ok) throw new Error(r.reason);
      await gw.store.ledger.settle(r.hold.id, amount);
    };
    offset = 3 * DAY;
    await gw.store.ledger.grant(a.id, 12_345_670_000_000, 'enterprise trial'); // $12,345.67
    await charge(1_234_567_891);
    await charge(5_300_001);
    offset = 2 * DAY;
    await gw.store.payments.create({ accountId: a.id, providerRef: `cs_seed_paid_${accounts}`, amountNano: 25 * USD, method: 'card' });
    await gw.store.payments.confirm(`cs_seed_paid_${accounts}`);
    await charge(987_654_321);
    offset = DAY;
    await charge(7_777);
    offset = 0;
    await gw.store.flush();
    // An operator's adjustment, written as another process would (no command posts one yet).
    const db = await openSql(gw.dbPath);
    await db.exec(`INSERT INTO journal (account_id, kind, amount, note, created_at) VALUES (${a.id}, 'adjustment', -2500000000, 'duplicate charge of Nov 2 reversed', ${now() - 60_000});
      UPDATE balances SET balance = balance - 2500000000 WHERE account_id = ${a.id};`);
    await db.close();
    await gw.store.sync();
    await charge(53_000); // today: $0.000053
    // A request in flight holds $0.0053 (shown as such, not $0.005300).
    const hold = await gw.store.ledger.reserve({ accountId: a.id, keyId: key.id, amount: 5_300_000, monthlyLimitNano: null });
    t.teardown(() => { if (hold.ok) gw.store.ledger.release(hold.hold.id); });
    await gw.store.payments.create({ accountId: a.id, providerRef: `cs_seed_failed_${accounts}`, amountNano: 10 * USD, method: 'card' });
    await gw.store.payments.fail(`cs_seed_failed_${accounts}`, 'Your card was declined.');

    // bypassCSP: only so that axe-core can be added to the page (the pages allow our own script only).
    const context = await browser.newContext({ viewport: size, baseURL: gw.url, bypassCSP: true });
    t.teardown(() => context.close());
    const page = await context.newPage();
    page.setDefaultTimeout(5000);
    await page.goto('/dashboard/login');
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
  /** The exact amount a money figure stands for: its tooltip when it is shortened, else its text. */
  const exact = async (page: Page, testId: string) => {
    const el = page.getByTestId(testId);
    const title = await el.locator('[title]').getAttribute('title', { timeout: 100 }).catch(() => null);
    return nano(title ?? (await el.innerText()));
  };

  for (const size of WIDTHS) {
    t.test(`${size.label} (${size.width} px): the ledger adds up to the balance shown; money and dates in one format`, async (t) => {
      const { page, accountId } = await withHistory(t, size);
      await page.goto('/dashboard/credits');
      t.notOk(await scrollsSideways(page), 'the Credits page does not scroll sideways');
      await page.screenshot({ path: `${SHOTS}credits-${size.label}.png`, fullPage: true });
      t.same(await seriousAxeIssues(page), [], 'axe-core finds no serious or critical issue on Credits');

      const amounts = await page.locator('table.ledger tbody td.num').allInnerTexts();
      const kinds = await page.locator('table.ledger tbody tr').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.ledger));
      t.same(kinds, ['charges', 'adjustment', 'charges', 'charges', 'topup', 'charges', 'grant'], 'every movement: today\'s charges, the adjustment, three earlier days of charges, the top-up, the grant');
      const sum = amounts.reduce((s, a) => s + nano(a), 0n);
      const total = nano(await page.getByTestId('ledger-total').innerText());
      t.equal(sum, total, 'the lines add up to the ledger\'s balance');
      t.equal(await exact(page, 'balance'), total, 'which is the balance shown at the top');
      t.equal(total, BigInt((await gw.store.ledger.balance(accountId)).balance), 'and the account\'s balance');
      t.equal(total, 12_345_670_000_000n + 25n * 1_000_000_000n - 2_500_000_000n - 1_234_567_891n - 5_300_001n - 987_654_321n - 7_777n - 53_000n);

      t.equal(await page.getByTestId('balance').innerText(), '$12,365.94', 'a balance over $1,000 has thousands separators and is cut to cents');
      t.equal(await page.getByTestId('held').innerText(), '$0.0053', 'a sub-cent amount: two significant digits');
      t.same(amounts.slice(-1), ['$12,345.67'], 'ledger amounts too have thousands separators');
      // Decimal points line up: every amount ends at the same x, padded to the column's decimals.
      const rights = await page.locator('table.ledger td.num .amount').evaluateAll((els) => els.map((e) => Math.round(e.getBoundingClientRect().right)));
      t.equal(new Set(rights).size, 1, 'amounts are padded to one width, so their decimal points align');

      const charges = page.locator('tr[data-ledger="charges"] a').first();
      const today = new Date(noon).toISOString().slice(0, 10);
      t.equal(await charges.getAttribute('href'), `/dashboard/requests?from=${today}&to=${today}`, 'a day\'s charges link to that day\'s requests');
      t.match(await page.locator('tr[data-ledger="grant"] time:visible').innerText(), /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/, 'dates: one format, saying UTC');
      t.match(await page.locator('tr[data-ledger="grant"] time:visible').getAttribute('title') ?? '', /^Your time: /, 'with the browser\'s local time offered');
      t.match(await page.locator('tr', { hasText: 'Your card was declined.' }).innerText(), /Failed/, 'a failed payment says why');

      await page.locator('tr[data-ledger="topup"]').getByRole('link', { name: 'Receipt' }).click();
      await page.waitForURL(/\/dashboard\/credits\/receipts\/\d+$/);
      t.equal(await page.getByTestId('receipt-amount').innerText(), '$25.00');
      t.equal(await page.getByTestId('receipt-method').innerText(), 'Card, through Stripe');
      t.match(await page.getByTestId('receipt-date').innerText(), /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
      t.match(await page.getByTestId('receipt-ref').innerText(), /^cs_seed_paid_\d+$/);
      t.notOk(await scrollsSideways(page), 'the receipt does not scroll sideways');
      await page.screenshot({ path: `${SHOTS}credits-${size.label}-receipt.png`, fullPage: true });
      t.same(await seriousAxeIssues(page), [], 'nor on the receipt');
    });
  }

  for (const size of WIDTHS) {
    t.test(`${size.label} (${size.width} px): offers are named by their provider where the config gives a display name`, async (t) => {
      const { page } = await withHistory(t, size);
      await page.goto('/dashboard/models');
      const names = await page.locator('[data-testid="offer-name"]').allInnerTexts();
      t.ok(names.some((n) => /^Simulated Chat Co\.\s+test\/gpt@sim-chat$/.test(n.trim())), 'the provider\'s name, its listing id beneath');
      t.ok(names.some((n) => n.trim() === 'test/gpt@sim-messages'), 'a provider without a display name: the listing id');
      t.notOk(await scrollsSideways(page), 'the Models page does not scroll sideways');
      await page.screenshot({ path: `${SHOTS}credits-${size.label}-models.png`, fullPage: true });
    });
  }

  t.test('a checkout cancelled on Stripe\'s page is expired there and shows as cancelled', async (t) => {
    const { page } = await withHistory(t, WIDTHS[1]);
    await page.goto('/dashboard/credits');
    await page.getByRole('button', { name: 'Continue to payment' }).click();
    await page.waitForURL(`${fake.url}/pay/**`);
    const sessionId = page.url().split('/').at(-1)!;
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.waitForURL(/\/dashboard\/credits\?payment=cancelled$/);
    t.ok(fake.expired.includes(sessionId), 'the fake Stripe saw the session expired');
    t.equal(fake.sessions.get(sessionId)!.status, 'expired');
    t.match(await page.locator('.notice').innerText(), /cancelled\. Nothing was charged/);
    t.match(await page.locator(`tr[data-payment="${sessionId}"]`).innerText(), /Cancelled/, 'the payment shows as cancelled, not pending');
    t.notOk(await scrollsSideways(page));
    await page.screenshot({ path: `${SHOTS}credits-phone-cancelled.png`, fullPage: true });

    // A payment that failed later, by Stripe's webhook, with Stripe's reason.
    await page.getByRole('button', { name: 'Continue to payment' }).click();
    await page.waitForURL(`${fake.url}/pay/**`);
    const failing = page.url().split('/').at(-1)!;
    fake.intents.set('pi_browser', { id: 'pi_browser', object: 'payment_intent', status: 'requires_payment_method', last_payment_error: { type: 'card_error', message: 'Your card does not support this type of purchase.' } });
    await deliver(gw.url, fake.event(failing, 'checkout.session.async_payment_failed', { session: { payment_intent: 'pi_browser' } }));
    await page.goto('/dashboard/credits');
    t.match(await page.locator(`tr[data-payment="${failing}"]`).innerText(), /Failed\s+Your card does not support this type of purchase\./);
  });
}
