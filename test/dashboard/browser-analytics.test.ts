// Analytics → Requests in headless Chromium at 1280×800 and 390×844: a request found by its id in
// lower case, without `req_`, or by its first characters; filters by key and endpoint with the
// totals of the filtered view; the filtered view as a CSV file (quoted, formulas defused); pages
// both ways with their place in the count; the overview's spend by model and by key; and no
// sideways scroll. Screenshots: screenshots/analytics-*.
import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import type { HistoryRow } from '../../lib/store/types.js';
import { SHOTS, WIDTHS, withGatewayAndChromium } from './chromium.js';

/** A key name a spreadsheet would run as a formula, with a quote and a comma to quote. */
const FORMULA_KEY = '=HYPERLINK("http://evil.example","a, b")';
const ROWS = 120;

await withGatewayAndChromium('analytics in headless Chromium', (env) => {
  const { gw } = env;
  let accounts = 0;
  /** An account with ROWS requests over two keys (every third of the formula-named key, every other one to /v1/messages). */
  async function loggedIn(t: Test, size: { width: number; height: number }) {
    const n = ++accounts;
    const email = `analytics${n}@example.com`;
    const a = await gw().store.accounts.create({ email, password: 'a long password' });
    const main = await gw().store.keys.create({ accountId: a.id, name: 'backend' });
    const odd = await gw().store.keys.create({ accountId: a.id, name: FORMULA_KEY });
    const t0 = Date.now() - ROWS * 60_000;
    const rows: HistoryRow[] = [];
    for (let i = 0; i < ROWS; i++) {
      const row: HistoryRow = {
        // ULID-like and time-ordered like the gateway's; the account number keeps accounts apart.
        requestId: `req_01JD${n}${String(i).padStart(4, '0')}K7ZQ4XW9HMBT3VNA`.slice(0, 30), time: t0 + i * 60_000, accountId: a.id,
        keyId: i % 3 === 0 ? odd.key.id : main.key.id, route: i % 2 ? 'messages' : 'chat', model: 'test/gpt', listing: 'test/gpt@sim-chat',
        attempts: [], status: 'ok', httpStatus: 200, stream: false, usage: { input: 100, output: 10, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 },
        holdNano: 0, costNano: 1_000_000 + i, latencyMs: 300, ttfbMs: 100, error: i === 7 ? '-1+1 went wrong, "badly"' : null,
      };
      rows.push(row);
      gw().store.history.record(row);
    }
    await gw().store.flush();
    const { page } = await env.loggedIn(t, size, email, 'a long password');
    return { page, rows, keys: { main: main.key.id, odd: odd.key.id } };
  }

  const scrollsSideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth > innerWidth);
  // After a click that navigates, the new page may be committed but not yet parsed: evaluateAll
  // does not wait for rows (it failed once on Node 24 in CI, reading none), so wait for the load.
  const listed = async (page: Page) => {
    await page.waitForLoadState();
    return page.locator('tr[data-request-id]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-request-id')));
  };
  const text = (page: Page, id: string) => page.getByTestId(id).innerText();

  for (const size of WIDTHS) {
    t.test(`${size.label} (${size.width} px): search, filters, totals, CSV, paging`, async (t) => {
      const { page, rows, keys } = await loggedIn(t, size);
      const shot = async (name: string) => {
        await page.screenshot({ path: `${SHOTS}analytics-${size.label}-${name}.png`, fullPage: true });
        await page.screenshot({ path: `${SHOTS}analytics-${size.label}-${name}-screen.png` }); // what one sees first, at full size
      };
      const target = rows[42].requestId;

      // Search: lower case without the prefix, then only the first characters.
      await page.goto('/dashboard/requests');
      await page.getByLabel('Request id').fill(target.slice(4).toLowerCase());
      await page.getByRole('button', { name: 'Apply' }).click();
      t.same(await listed(page), [target], 'the id in lower case without req_ finds the request');
      await page.getByLabel('Request id').fill(target.slice(0, 12).toUpperCase());
      await page.getByRole('button', { name: 'Apply' }).click();
      const prefixed = rows.filter((r) => r.requestId.startsWith(target.slice(0, 12))).map((r) => r.requestId).reverse();
      t.ok(prefixed.length > 1, 'several ids share that start');
      t.same(await listed(page), prefixed, 'REQ_ and the first characters find every request that starts so');
      await page.getByLabel('Request id').fill('req_not-an-id!');
      await page.getByRole('button', { name: 'Apply' }).click();
      t.equal(await page.getByLabel('Request id').getAttribute('aria-invalid'), 'true', 'a search that is no id says so at its field');
      t.equal(await page.getByLabel('Request id').getAttribute('aria-describedby'), 'q-error');
      t.match(await page.locator('#q-error').innerText(), /Not a request id/);

      // Filters and their totals.
      await page.goto('/dashboard/requests');
      t.equal(await text(page, 'total-requests'), '120', 'totals of everything');
      await page.getByLabel('Key').selectOption({ label: FORMULA_KEY });
      await page.getByLabel('Endpoint').selectOption({ label: 'POST /v1/chat/completions' });
      await page.getByRole('button', { name: 'Apply' }).click();
      const picked = rows.filter((r) => r.keyId === keys.odd && r.route === 'chat');
      t.equal(picked.length, 20);
      t.same(await listed(page), picked.map((r) => r.requestId).reverse(), 'the rows of that key and endpoint');
      t.equal(await text(page, 'total-requests'), '20', 'totals: requests of the filtered view');
      t.equal(await text(page, 'total-tokens'), '2,000 / 200', 'tokens in / out');
      const spend = picked.reduce((s, r) => s + r.costNano, 0);
      t.equal(spend, 20_001_140);
      t.equal(await text(page, 'total-spend'), '$0.02', 'spend, as money is shown');
      t.equal(await page.getByTestId('total-spend').locator('[title]').getAttribute('title'), '$0.02000114', 'the exact amount on hover');
      t.notOk(await scrollsSideways(page), 'the filtered page does not scroll sideways');
      await shot('filtered');

      // The CSV of the filtered view.
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('csv').click()]);
      t.match(download.suggestedFilename(), /^requests-\d{4}-\d{2}-\d{2}\.csv$/);
      const csv = readFileSync((await download.path())!, 'utf8');
      const lines = csv.split('\r\n');
      t.equal(lines.at(-1), '', 'CRLF after every record');
      t.equal(lines.length - 2, 20, 'a header and the 20 rows of the filtered view');
      t.match(lines[0], /^time_utc,request_id,key,endpoint,model,offer,status,http_status,input_tokens,output_tokens,/);
      t.equal(lines[1].split(',')[1], picked.at(-1)!.requestId, 'newest first');
      t.ok(lines[1].includes(`,"'=HYPERLINK(""http://evil.example"",""a, b"")",`), 'a formula-like cell is quoted, its quotes doubled, and starts with an apostrophe');
      t.ok(lines[1].includes(',0.001000114,'), 'cost in USD, exact');
      const rowWithError = csv.split('\r\n').find((l) => l.includes(rows[7].requestId));
      t.notOk(rowWithError, 'row 7 is not of this filter');

      // Paging both ways, with the place in the count.
      await page.goto('/dashboard/requests');
      t.equal(await text(page, 'page-count'), '1–50 of 120');
      t.equal(await page.getByRole('link', { name: '← Newer' }).count(), 0, 'no newer page on the first');
      await page.getByRole('link', { name: 'Older →' }).click();
      t.equal(await text(page, 'page-count'), '51–100 of 120');
      t.same(await listed(page), rows.slice(20, 70).map((r) => r.requestId).reverse());
      await page.getByRole('link', { name: 'Older →' }).click();
      t.equal(await text(page, 'page-count'), '101–120 of 120');
      t.equal(await page.getByRole('link', { name: 'Older →' }).count(), 0, 'no older page on the last');
      t.notOk(await scrollsSideways(page), 'the last page does not scroll sideways');
      await shot('last-page');
      await page.getByRole('navigation', { name: 'Pages' }).screenshot({ path: `${SHOTS}analytics-${size.label}-pager.png` });
      await page.getByRole('link', { name: '← Newer' }).click();
      t.equal(await text(page, 'page-count'), '51–100 of 120', 'back one page');
      t.same(await listed(page), rows.slice(20, 70).map((r) => r.requestId).reverse());
      await page.getByRole('link', { name: '← Newer' }).click();
      t.equal(await text(page, 'page-count'), '1–50 of 120', 'back to the first');
      t.same(await listed(page), rows.slice(70).map((r) => r.requestId).reverse());
      await shot('first-page');

      // Overview: the period's spend per model and per key, each linking to its requests.
      await page.goto('/dashboard');
      const cells = (id: string) => page.getByTestId(id).locator('tbody tr').evaluateAll((trs) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => (td as HTMLElement).innerText.trim())));
      t.same(await cells('spend-by-model'), [['test/gpt', '120', '$0.12']], 'spend by model');
      t.same(await cells('spend-by-key'), [['backend', '80', '$0.08'], [FORMULA_KEY, '40', '$0.04']], 'spend by key, the largest first');
      t.notOk(await scrollsSideways(page), 'the overview does not scroll sideways');
      await page.getByTestId('spend-by-key').scrollIntoViewIfNeeded();
      await page.screenshot({ path: `${SHOTS}analytics-${size.label}-overview-screen.png` });
      await page.screenshot({ path: `${SHOTS}analytics-${size.label}-overview.png`, fullPage: true });
      await page.getByTestId('spend-by-key').getByRole('link', { name: FORMULA_KEY }).click();
      t.equal(await text(page, 'total-requests'), '40', 'a key\'s line opens its requests of the period');
      t.equal(await page.getByTestId('total-spend').locator('[title]').getAttribute('title'), '$0.04000234');
    });
  }
});
