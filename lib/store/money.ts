// Exact conversions between USD decimal strings and integer nano-USD (1e-9 USD). No floats anywhere:
// amounts are parsed digit by digit and checked against Number.MAX_SAFE_INTEGER.
const NANO_PER_USD = 1_000_000_000n;
const USD_DECIMAL = /^(\d+)(?:\.(\d{1,9}))?$/;

/** "12.5" → 12_500_000_000. Throws RangeError for anything but a non-negative decimal with ≤ 9 places. */
export function parseUsd(text: string): number {
  const m = USD_DECIMAL.exec(text.trim());
  if (!m) throw new RangeError(`"${text}" is not a USD amount (a decimal like 10 or 2.50, at most 9 decimals)`);
  const nano = BigInt(m[1]) * NANO_PER_USD + BigInt((m[2] ?? '').padEnd(9, '0'));
  if (nano > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`${text} USD is too large`);
  return Number(nano);
}

/** A price in USD per million tokens → nano-USD per token (× 1000); more than 3 decimals is not exact. */
export function parseUsdPerMillion(text: string): number {
  const nanoPerMillion = parseUsd(text);
  if (nanoPerMillion % 1_000_000 !== 0) {
    throw new RangeError(`"${text}" USD per million tokens has more than 3 decimals`);
  }
  return nanoPerMillion / 1_000_000;
}

/** 1_234_567 → "$0.001234567"; 5_000_000_000 → "$5.00" (at least cents, no trailing zeros beyond). */
export function formatUsd(nano: number): string {
  const sign = nano < 0 ? '-' : '';
  const abs = BigInt(Math.abs(nano));
  const whole = abs / NANO_PER_USD;
  const frac = (abs % NANO_PER_USD).toString().padStart(9, '0').replace(/0+$/, '').padEnd(2, '0');
  return `${sign}$${whole}.${frac}`;
}

/** Nano-USD per token → "3" / "0.075" USD per million tokens. */
export function formatUsdPerMillion(nanoPerToken: number): string {
  return formatUsd(nanoPerToken * 1_000_000).slice(1).replace(/\.00$/, '');
}
