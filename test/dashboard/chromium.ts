// Debian's Chromium for the browser tests (CHROMIUM_PATH elsewhere), launched headless without the
// background services that would reach the network.
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export const launchChromium = (): Promise<Browser> => chromium.launch({
  executablePath: CHROMIUM,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
