// Forms in headless Chromium at 1280×800 and 390×844: a refused field says why next to itself
// (aria-invalid, aria-describedby naming its message), and a form sent after the session ended
// says so, keeps what was typed through the login, and brings the owner back to the page with the
// form filled in, saving nothing until they send it again. Screenshots: screenshots/forms-*.
import t, { type Test } from 'tap';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { focusedFieldName, logIn, SHOTS, WIDTHS, withGatewayAndChromium } from './chromium.js';



await withGatewayAndChromium('forms in headless Chromium', (env) => {
  const { gw } = env;
  let accounts = 0;
  async function loggedIn(t: Test, size: { width: number; height: number }): Promise<{ page: Page; context: BrowserContext; accountId: number; email: string }> {
    const email = `forms${++accounts}@example.com`;
    const a = await gw().store.accounts.create({ email, password: 'a long password' });
    await gw().store.keys.create({ accountId: a.id, name: 'production' });
    const { page, context } = await env.loggedIn(t, size, email, 'a long password');
    return { page, context, accountId: a.id, email };
  }

  const scrollsSideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth > innerWidth);
  /** The message an input's aria-describedby names, or null when it is not marked invalid. */
  async function fieldError(input: Locator): Promise<string | null> {
    if ((await input.getAttribute('aria-invalid')) !== 'true') return null;
    const id = await input.getAttribute('aria-describedby');
    return id ? input.page().locator(`[id="${id}"]`).innerText() : '(no aria-describedby)';
  }

  for (const size of WIDTHS) {
    t.test(`${size.label} (${size.width} px): errors beside their fields`, async (t) => {
      const { page } = await loggedIn(t, size);
      const shot = (name: string) => page.screenshot({ path: `${SHOTS}forms-${size.label}-${name}.png`, fullPage: true });
      await page.goto('/dashboard/keys');
      const form = page.locator('#create form');
      const field = (name: string) => form.locator(`[name="${name}"]`);
      await field('name').fill('staging');
      await field('monthly_limit').fill('twelve');
      await form.getByRole('button', { name: 'Create key' }).click();
      t.match(await fieldError(field('monthly_limit')), /monthly limit must be an amount in USD/, 'the limit says why, next to itself');
      t.equal(await fieldError(field('name')), null, 'the name is not marked');
      t.equal(await focusedFieldName(page, 'monthly_limit'), 'monthly_limit', 'the refused field has the focus');
      t.equal(await field('name').inputValue(), 'staging', 'the input is kept');
      t.match(await page.locator('.notice').first().innerText(), /Check the field marked below/, 'the banner points at the field');
      t.notOk(await scrollsSideways(page), 'no sideways scroll');
      await form.locator('[aria-invalid="true"]').scrollIntoViewIfNeeded();
      await shot('key-limit-error');

      await field('monthly_limit').fill('');
      await field('name').fill('Production');
      await form.getByRole('button', { name: 'Create key' }).click();
      t.match(await fieldError(field('name')), /already have an active key named “Production”/, 'a duplicate name is marked at the name');
      t.equal(await fieldError(field('monthly_limit')), null);
      await field('name').fill('ci');
      await field('rpm').fill('0');
      await form.getByRole('button', { name: 'Create key' }).click();
      t.match(await fieldError(field('rpm')), /Requests per minute must be a whole number/, 'and a rate at its own field');

      await page.goto('/dashboard/routing');
      await page.getByLabel(/^Output, USD per million tokens/).fill('lots');
      await page.getByRole('button', { name: /^Save/ }).click();
      t.match(await fieldError(page.locator('[name="price_cap_output"]')), /price cap is an amount/, 'the routing form marks the cap it refused');
      t.equal(await fieldError(page.locator('[name="price_cap_input"]')), null, 'and only that one');
      t.notOk(await scrollsSideways(page), 'no sideways scroll');
      await page.locator('[aria-invalid="true"]').scrollIntoViewIfNeeded();
      await shot('routing-cap-error');
    });

    t.test(`${size.label} (${size.width} px): a form sent after the session ended keeps its input through the login`, async (t) => {
      const { page, context, accountId, email } = await loggedIn(t, size);
      const shot = (name: string) => page.screenshot({ path: `${SHOTS}forms-${size.label}-${name}.png`, fullPage: true });
      await page.goto('/dashboard/keys');
      const form = page.locator('#create form');
      await form.locator('[name="name"]').fill('nightly batch');
      await form.locator('[name="monthly_limit"]').fill('12.50');
      await form.locator('[name="models"][value="test/gpt"]').check();

      // The session ends meanwhile (expired, or ended elsewhere).
      const token = (await context.cookies()).find((c) => c.name === 'gw_session')!.value;
      await gw().store.sessions.end(token);
      await form.getByRole('button', { name: 'Create key' }).click();
      await page.waitForURL(/\/dashboard\/keys$/); // the login page answers the post
      t.match(await page.locator('.notice').innerText(), /Your session has ended, so that was not saved/, 'says the session ended');
      t.notMatch(await page.content(), /This form has expired/);
      t.equal((await gw().store.keys.list(accountId)).length, 1, 'nothing was created');
      const kept = await page.locator('input[name="kept"]').getAttribute('value');
      t.match(kept, /name=nightly\+batch/, 'the login form carries the input');
      t.notMatch(kept, /csrf/, 'but not the old token');
      t.notOk(await scrollsSideways(page), 'no sideways scroll');
      await shot('session-ended');

      await logIn(page, email, 'a long password');
      await page.waitForURL(/\/dashboard\/keys$/);
      t.equal(await form.locator('[name="name"]').inputValue(), 'nightly batch', 'back on the page, the name kept');
      t.equal(await form.locator('[name="monthly_limit"]').inputValue(), '12.50', 'the limit kept');
      t.ok(await form.locator('[name="models"][value="test/gpt"]').isChecked(), 'the ticked model kept');
      t.match(await page.locator('.notice').first().innerText(), /nothing was saved/, 'says nothing was saved yet');
      t.equal((await gw().store.keys.list(accountId)).length, 1, 'still nothing created: the owner sends it again');
      t.notOk(await scrollsSideways(page), 'no sideways scroll');
      await shot('kept-after-login');

      await form.getByRole('button', { name: 'Create key' }).click();
      await page.getByTestId('key-created').waitFor();
      const created = (await gw().store.keys.list(accountId)).find((k) => k.name === 'nightly batch');
      t.match(created, { monthlyLimitNano: 12_500_000_000, allowedModels: ['test/gpt'] }, 'sent again with a fresh token: created as typed');
      await page.goto('/dashboard/keys');
      t.equal(await form.locator('[name="name"]').inputValue(), '', 'the kept input is shown once');
    });
  }
});
