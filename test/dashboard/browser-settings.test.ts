// Settings and the reset link in headless Chromium at 1280×800 and 390×844: the sessions of two
// browsers listed (this one marked), "Sign out other sessions" ending the other browser's, a wrong
// current password marked at its field, a password change that keeps this browser signed in and
// signs the other out, and a reset link that works once. Every page opens with a skip link (the
// first tab stop, shown when focused, moving the focus to main). No page scrolls sideways; axe-core
// finds no serious or critical issue. Screenshots: screenshots/settings-*.
import t, { type Test } from 'tap';
import { createRequire } from 'node:module';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { resetLink, RESET_TTL_MS } from '../../lib/dashboard/reset-link.js';
import { focusedFieldName, logIn, SHOTS, WIDTHS, withGatewayAndChromium } from './chromium.js';

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

await withGatewayAndChromium('settings in headless Chromium', (env) => {
  const { gw } = env;
  let accounts = 0;

  /** A new browser (bypassCSP only so that axe-core can be added to its pages), on the login page. */
  async function newBrowser(t: Test, size: { width: number; height: number }): Promise<{ page: Page; context: BrowserContext }> {
    const context = await env.browser().newContext({ viewport: size, baseURL: gw().url, bypassCSP: true });
    t.teardown(() => context.close());
    const page = await context.newPage();
    page.setDefaultTimeout(5000);
    return { page, context };
  }

  async function loggedIn(t: Test, size: { width: number; height: number }, email: string, password: string) {
    const b = await newBrowser(t, size);
    await b.page.goto('/dashboard/login');
    await logIn(b.page, email, password);
    await b.page.waitForURL(/\/dashboard$/);
    return b;
  }

  const scrollsSideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth > innerWidth);

  async function seriousAxeIssues(page: Page): Promise<string[]> {
    await page.addScriptTag({ path: AXE });
    const violations = await page.evaluate(async () => (await (window as any).axe.run(document, { resultTypes: ['violations'] })).violations as { id: string; impact: string; nodes: { target: string[] }[] }[]);
    return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }

  /** The page is laid out within the width and passes axe-core; a screenshot for people to look at. */
  async function checkScreen(t: Test, page: Page, name: string): Promise<void> {
    t.notOk(await scrollsSideways(page), `${name}: the page does not scroll sideways`);
    await page.screenshot({ path: `${SHOTS}settings-${name}.png`, fullPage: true });
    t.same(await seriousAxeIssues(page), [], `${name}: axe-core finds no serious or critical issue`);
  }

  /**
   * The skip link is the first tab stop: the first Tab of a page reaches it (or, where the page put
   * the focus in its first field, one Shift+Tab back does), shown on screen; following it puts the
   * focus on main.
   */
  async function checkSkipLink(t: Test, page: Page, what: string): Promise<void> {
    const firstInOrder = await page.evaluate(() =>
      document.querySelector('a[href], button, input:not([type=hidden]):not([hidden]), select, textarea, [tabindex]:not([tabindex="-1"])')?.className);
    t.equal(firstInOrder, 'skip-link', `${what}: the skip link comes first of everything focusable`);
    const autofocused = await page.evaluate(() => document.activeElement !== document.body);
    await page.keyboard.press(autofocused ? 'Shift+Tab' : 'Tab');
    const first = await page.evaluate(() => {
      const a = document.activeElement as HTMLElement;
      const r = a.getBoundingClientRect();
      return { tag: a.tagName, text: a.textContent, href: a.getAttribute('href'), visible: r.width > 0 && r.height > 0 && r.top >= 0 && r.left >= 0 && r.right <= innerWidth };
    });
    t.same(first, { tag: 'A', text: 'Skip to content', href: '#main', visible: true }, `${what}: the ${autofocused ? 'tab stop before the focused field' : 'first tab stop'} is the skip link, on screen`);
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.activeElement?.id === 'main');
    t.equal(await page.evaluate(() => document.activeElement?.tagName), 'MAIN', `${what}: the skip link moves the focus to main`);
  }

  /** The message an input's aria-describedby names, or null when it is not marked invalid. */
  async function fieldError(input: Locator): Promise<string | null> {
    if ((await input.getAttribute('aria-invalid')) !== 'true') return null;
    const ids = (await input.getAttribute('aria-describedby'))?.split(' ') ?? [];
    const texts = await Promise.all(ids.map((id) => input.page().locator(`[id="${id}"]`).innerText()));
    return texts.join(' ') || '(no aria-describedby)';
  }

  for (const size of WIDTHS) {
    t.test(`${size.label} (${size.width} px): sessions of two browsers, sign out others, change password`, async (t) => {
      const email = `settings${++accounts}@example.com`;
      await gw().store.accounts.create({ email, password: 'the first password' });
      const a = await loggedIn(t, size, email, 'the first password');
      const b = await loggedIn(t, size, email, 'the first password');

      await a.page.getByRole('link', { name: 'Settings' }).click();
      await a.page.waitForURL(/\/dashboard\/settings$/);
      t.equal(await a.page.getByRole('link', { name: 'Settings' }).getAttribute('aria-current'), 'page', 'in the navigation, marked as the current page');
      const rows = a.page.getByTestId('session');
      t.equal(await rows.count(), 2, 'two browsers, two sessions');
      t.equal(await a.page.locator('[data-testid="session"][data-current]').count(), 1);
      t.match(await a.page.locator('[data-testid="session"][data-current]').innerText(), /This session/);
      await checkScreen(t, a.page, `${size.label}-sessions`);
      await checkSkipLink(t, a.page, 'settings');

      await a.page.getByRole('button', { name: 'Sign out other sessions' }).click();
      await a.page.waitForURL(/notice=others-ended/);
      t.match(await a.page.locator('.notice-success').innerText(), /1 other session was signed out/);
      t.equal(await rows.count(), 1, 'this session only');
      await b.page.goto('/dashboard/settings');
      t.match(b.page.url(), /\/dashboard\/login\?next=/, 'the other browser is signed out');

      // Wrong current password: marked at its field, nothing changed.
      await logIn(b.page, email, 'the first password');
      await b.page.waitForURL(/\/dashboard\/settings$/);
      await a.page.reload();
      t.equal(await rows.count(), 2, 'signed in again: two sessions');
      const current = a.page.getByLabel('Current password');
      await current.fill('not my password');
      await a.page.getByLabel('New password').fill('the second password');
      await a.page.getByRole('button', { name: 'Change password' }).click();
      await a.page.waitForLoadState();
      t.match(await fieldError(current), /That is not your current password/, 'a wrong current password is an error beside its field');
      t.equal(await focusedFieldName(a.page, 'current_password'), 'current_password', 'which has the focus');
      t.match(await a.page.locator('.notice-error').innerText(), /not changed/);
      await checkScreen(t, a.page, `${size.label}-wrong-password`);
      t.ok(await gw().store.accounts.checkPassword(email, 'the first password'), 'the password is unchanged');

      await current.fill('the first password');
      await a.page.getByLabel('New password').fill('the second password');
      await a.page.getByRole('button', { name: 'Change password' }).click();
      await a.page.waitForURL(/notice=password-changed/);
      t.match(await a.page.locator('.notice-success').innerText(), /Your password was changed and 1 other session was signed out/);
      t.equal(await rows.count(), 1, 'this browser is still signed in, alone');
      await b.page.reload();
      t.match(b.page.url(), /\/dashboard\/login/, 'the other browser is signed out');
      t.ok(await gw().store.accounts.checkPassword(email, 'the second password'), 'the new password works');
      t.equal(await gw().store.accounts.checkPassword(email, 'the first password'), null, 'the old one no more');
    });

    t.test(`${size.label} (${size.width} px): a reset link sets a new password once`, async (t) => {
      const email = `reset${++accounts}@example.com`;
      const account = await gw().store.accounts.create({ email, password: 'forgotten password' });
      const signedIn = await loggedIn(t, size, email, 'forgotten password');
      const { page } = await newBrowser(t, size);

      await page.goto('/dashboard/login');
      t.match(await page.locator('main').innerText(), /Forgot your password\? Ask your operator for a reset link/);
      await checkSkipLink(t, page, 'login');

      const link = resetLink((await gw().store.passwordResets.create(account.id, RESET_TTL_MS)).token);
      await page.goto(link);
      t.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Choose a new password');
      t.match(await page.locator('main').innerText(), new RegExp(email.replace('.', '\\.')));
      await checkScreen(t, page, `${size.label}-reset`);
      await checkSkipLink(t, page, 'reset');

      await page.locator('[name=new_password]').fill('remembered password');
      await page.getByLabel('New password again').fill('remembered passwort');
      await page.getByRole('button', { name: 'Set password' }).click();
      await page.waitForLoadState();
      t.match(await fieldError(page.getByLabel('New password again')), /The two passwords differ/, 'a mismatch is marked at the confirmation');
      await checkScreen(t, page, `${size.label}-reset-mismatch`);
      t.ok(await gw().store.accounts.checkPassword(email, 'forgotten password'), 'nothing changed');

      await page.locator('[name=new_password]').fill('remembered password');
      await page.getByLabel('New password again').fill('remembered password');
      await page.getByRole('button', { name: 'Set password' }).click();
      await page.waitForURL(/\/dashboard\/login\?notice=password-reset$/);
      t.match(await page.locator('.notice-success').innerText(), /new password is set/);
      await signedIn.page.reload();
      t.match(signedIn.page.url(), /\/dashboard\/login/, 'the browser that was signed in is signed out');
      await logIn(page, email, 'remembered password');
      await page.waitForURL(/\/dashboard$/);
      t.pass('the new password logs in');

      const again = await page.goto(link);
      t.equal(again?.status(), 404, 'the link a second time');
      t.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'This reset link does not work');
      t.match(await page.locator('main').innerText(), /Ask your operator for a new reset link/);
      await checkScreen(t, page, `${size.label}-reset-used`);
      t.ok(await gw().store.accounts.checkPassword(email, 'remembered password'));
    });
  }
});
