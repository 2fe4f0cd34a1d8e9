// Display forms of times, token counts and money. Times are shown in UTC, as everywhere in the
// gateway (month boundaries of limits are UTC too).
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

/** Exact: "$0.000135", "$25.00". */
export const usd = formatUsd;

/**
 * A headline amount: cents from $1 up, else two significant digits (at most six decimals), cut
 * toward zero, with the exact amount as its tooltip when they differ.
 */
export function money(nano: number): Html | string {
  const abs = Math.abs(nano);
  const decimals = abs === 0 || abs >= 1e9 ? 2 : Math.min(6, Math.max(2, 1 - Math.floor(Math.log10(abs / 1e9))));
  const unit = 10 ** (9 - decimals);
  const shown = Math.sign(nano) * Math.floor(abs / unit) * unit;
  const exact = formatUsd(nano);
  return shown === nano ? exact : html`<span title="${exact}">${formatUsd(shown)}</span>`;
}

/** Nano-USD per token → "$3" / "$0.30" per million tokens. */
export const perMillion = (nanoPerToken: number): string => `$${formatUsdPerMillion(nanoPerToken)}`;

export const milliseconds = (ms: number | null): string => (ms === null ? '—' : ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${count(Math.round(ms))} ms`);
