// Debian's Chromium for the browser tests (CHROMIUM_PATH elsewhere), launched headless without the
// background services that would reach the network.
import t, { type Test } from 'tap';
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export const launchChromium = (): Promise<Browser> => chromium.launch({
  executablePath: CHROMIUM,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

/** The two sizes the dashboard is tried at: a desktop and a phone. */
export const WIDTHS = [{ label: 'desktop', width: 1280, height: 800 }, { label: 'phone', width: 390, height: 844 }] as const;

/** Where the browser tests put their screenshots, for people to look at. */
export const SHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));

export interface BrowserEnv {
  gw(): TestGateway;
  browser(): Browser;
  /** A new browser context of `size`, closed at the end of `t`, logged in as `email`. */
  loggedIn(t: Test, size: { width: number; height: number }, email: string, password: string): Promise<{ page: Page; context: BrowserContext }>;
}

/**
 * `tests`, given a gateway (no credit) and Chromium, each started before and closed after them; or
 * one skipped test saying why, when there is no Chromium.
 */
export async function withGatewayAndChromium(name: string, tests: (env: BrowserEnv) => void): Promise<void> {
  if (!existsSync(CHROMIUM)) {
    t.test(name, { skip: `SKIPPED the browser tests: no Chromium at ${CHROMIUM} (install it or set CHROMIUM_PATH)` }, () => {});
    return;
  }
  let browser: Browser | undefined, gw: TestGateway | undefined;
  t.before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    gw = await startGateway({ creditUsd: 0 });
    browser = await launchChromium();
  });
  t.teardown(async () => {
    await browser?.close();
    await gw?.close();
  });
  tests({
    gw: () => gw!, browser: () => browser!,
    async loggedIn(t: Test, size: { width: number; height: number }, email: string, password: string) {
      const context = await browser!.newContext({ viewport: size, baseURL: gw!.url, acceptDownloads: true });
      t.teardown(() => context.close());
      const page = await context.newPage();
      page.setDefaultTimeout(5000);
      await page.goto('/dashboard/login');
      await logIn(page, email, password);
      await page.waitForURL(/\/dashboard$/);
      return { page, context };
    },
  });
}

/**
 * The name of the field that has the focus: the browser applies a field's `autofocus` when it next
 * renders the page, which can come after the load event (on a busy machine it did), so this waits
 * up to 5 s for `expected` before it reads what has the focus.
 */
export async function focusedFieldName(page: Page, expected: string): Promise<string | null | undefined> {
  await page.waitForFunction((name) => document.activeElement?.getAttribute('name') === name, expected, { timeout: 5000 }).catch(() => {});
  return page.evaluate(() => document.activeElement?.getAttribute('name'));
}

/** Log in on the login page the browser shows. */
export async function logIn(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
}
