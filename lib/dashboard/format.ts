// Display forms of times, token counts and money. Times are shown in UTC, as everywhere in the
// gateway (month boundaries of limits are UTC too); <time> elements from `when` also offer the
// browser's local time (assets/dashboard.js). Money has thousands separators; amounts of a cent
// or more show cents, smaller ones two significant digits ("$0.0053"), never a mix in one figure.
import { formatUsd, formatUsdPerMillion } from '../store/money.js';
import { html, type Html } from './html.js';

export const DAY_MS = 86_400_000;

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** "2026-11-14 10:32:05 UTC" */
export const dateTime = (ms: number): string => new Date(ms).toISOString().slice(0, 19).replace('T', ' ') + ' UTC';

/** "2026-11-14 10:32" (in tables whose heading says UTC) */
export const dateMinute = (ms: number): string => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');

/** "10:32:05" (in tables whose heading says UTC) */
export const timeOfDay = (ms: number): string => new Date(ms).toISOString().slice(11, 19);

/** "2026-11-14" */
export const isoDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** "Nov 14" */
export const shortDay = (ms: number): string => {
  const d = new Date(ms);
  return `${MONTHS[d.getUTCMonth()]} ${d.getUTCDate()}`;
};

export const count = (n: number): string => n.toLocaleString('en-US');

/** "$1234.50" → "$1,234.50": thousands separators in the whole dollars of formatUsd's output. */
const grouped = (text: string): string => text.replace(/\d+(?=\.)/, (whole) => whole.replace(/\B(?=(\d{3})+(?!\d))/g, ','));

/** Exact, with thousands separators: "$0.000135", "$1,025.00". */
export const usd = (nano: number): string => grouped(formatUsd(nano));

/** The decimals `money` shows: cents from one cent up, else two significant digits (at most six). */
const moneyDecimals = (abs: number): number => (abs === 0 || abs >= 1e7 ? 2 : Math.min(6, 1 - Math.floor(Math.log10(abs / 1e9))));

/**
 * A display amount: "$1,234.56", "$0.03", "$0.0053", cut toward zero (a balance is never shown
 * larger than it is), with the exact amount as its tooltip when they differ.
 */
export function money(nano: number): Html | string {
  const abs = Math.abs(nano);
  const unit = 10 ** (9 - moneyDecimals(abs));
  const shown = Math.sign(nano) * Math.floor(abs / unit) * unit;
  const exact = usd(nano);
  return shown === nano ? exact : html`<span title="${exact}">${usd(shown)}</span>`;
}

/**
 * A column of exact amounts with their decimal points aligned: each is padded to the column's
 * most decimals with invisible zeros (right-aligned, tabular figures in the stylesheet).
 */
export function usdColumn(amounts: number[]): (nano: number) => Html {
  const decimals = (nano: number) => usd(nano).split('.')[1].length;
  const most = Math.max(2, ...amounts.map(decimals));
  return (nano) => {
    const pad = most - decimals(nano);
    return html`<span class="amount">${usd(nano)}${pad > 0 && html`<span class="pad" aria-hidden="true">${'0'.repeat(pad)}</span>`}</span>`;
  };
}

/**
 * "2026-11-14 10:32 UTC" in a <time> element; the browser adds its local time (dashboard.js).
 * The form for a date that stands on its own (Credits, receipts), saying UTC itself.
 */
export const when = (ms: number): Html => html`<time datetime="${new Date(ms).toISOString()}" data-local>${dateMinute(ms)} UTC</time>`;

/** Nano-USD per token → "$3" / "$0.30" per million tokens. */
export const perMillion = (nanoPerToken: number): string => `$${formatUsdPerMillion(nanoPerToken)}`;

export const milliseconds = (ms: number | null): string => (ms === null ? '—' : ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${count(Math.round(ms))} ms`);
