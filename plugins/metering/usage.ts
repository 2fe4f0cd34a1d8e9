// Usage as the upstream reports it, in either wire format, turned into our Usage (messages sense:
// `input` excludes cache reads and writes) and priced per token class. Upstream numbers are not
// trusted: anything that is not a finite number becomes "not reported", and counts are clamped.
import type { WireFormat } from '../../lib/config-types.js';
import type { UnitPrices, Usage } from '../../lib/context.js';

/** Above this a token count is absurd for one request (the hold caps the charge anyway). */
const MAX_TOKENS = 100_000_000;

export type Reported = Partial<Usage>;

function tokens(v: unknown): number | undefined {
  if (typeof v !== 'number' || !Number.isFinite(v)) return undefined;
  return Math.min(MAX_TOKENS, Math.max(0, Math.floor(v)));
}

/** Copy the fields that are present (a later report refines an earlier one). */
function defined(u: Reported): Reported {
  const out: Reported = {};
  for (const k of ['input', 'output', 'cacheRead', 'cacheWrite', 'cacheWrite1h'] as const) if (u[k] !== undefined) out[k] = u[k];
  return out;
}

/** Chat format: prompt_tokens includes the cached tokens. */
export function fromChatUsage(u: any): Reported {
  if (!u || typeof u !== 'object') return {};
  const prompt = tokens(u.prompt_tokens);
  const cached = tokens(u.prompt_tokens_details?.cached_tokens);
  return defined({
    input: prompt === undefined ? undefined : Math.max(0, prompt - (cached ?? 0)),
    output: tokens(u.completion_tokens),
    cacheRead: cached ?? (prompt === undefined ? undefined : 0),
  });
}

/**
 * Messages format: input_tokens excludes the cache classes; cache_creation_input_tokens counts all
 * cache writes, and `cache_creation` splits them into 5-minute and 1-hour ones.
 */
export function fromMessagesUsage(u: any): Reported {
  if (!u || typeof u !== 'object') return {};
  const split = u.cache_creation && typeof u.cache_creation === 'object' ? u.cache_creation : undefined;
  const write5m = tokens(split?.ephemeral_5m_input_tokens);
  const write1h = tokens(split?.ephemeral_1h_input_tokens);
  return defined({
    input: tokens(u.input_tokens),
    output: tokens(u.output_tokens),
    cacheRead: tokens(u.cache_read_input_tokens),
    // Without the total, the split's sum (a 1-hour write is never lost for want of a total).
    cacheWrite: tokens(u.cache_creation_input_tokens) ?? (split && (write5m !== undefined || write1h !== undefined) ? (write5m ?? 0) + (write1h ?? 0) : undefined),
    cacheWrite1h: write1h,
  });
}

export function fromUsage(format: WireFormat, u: any): Reported {
  return format === 'chat' ? fromChatUsage(u) : fromMessagesUsage(u);
}

/** Exact cost in nano-USD; `cacheWrite1h` is the part of `cacheWrite` at the 1-hour price. */
export function costOf(u: Usage, p: UnitPrices): bigint {
  const write1h = Math.min(u.cacheWrite1h, u.cacheWrite);
  return BigInt(u.input) * BigInt(p.input) + BigInt(u.output) * BigInt(p.output) +
    BigInt(u.cacheRead) * BigInt(p.cacheRead) + BigInt(u.cacheWrite - write1h) * BigInt(p.cacheWrite) +
    BigInt(write1h) * BigInt(p.cacheWrite1h);
}
