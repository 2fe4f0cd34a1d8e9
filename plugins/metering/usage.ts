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
  for (const k of ['input', 'output', 'cacheRead', 'cacheWrite'] as const) if (u[k] !== undefined) out[k] = u[k];
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

/** Messages format: input_tokens excludes the cache classes. */
export function fromMessagesUsage(u: any): Reported {
  if (!u || typeof u !== 'object') return {};
  return defined({
    input: tokens(u.input_tokens),
    output: tokens(u.output_tokens),
    cacheRead: tokens(u.cache_read_input_tokens),
    cacheWrite: tokens(u.cache_creation_input_tokens),
  });
}

export function fromUsage(format: WireFormat, u: any): Reported {
  return format === 'chat' ? fromChatUsage(u) : fromMessagesUsage(u);
}

/** Exact cost in nano-USD. */
export function costOf(u: Usage, p: UnitPrices): bigint {
  return BigInt(u.input) * BigInt(p.input) + BigInt(u.output) * BigInt(p.output) +
    BigInt(u.cacheRead) * BigInt(p.cacheRead) + BigInt(u.cacheWrite) * BigInt(p.cacheWrite);
}
