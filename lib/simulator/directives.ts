// Per-request shaping and fault injection: `<<sim key=value ...>>` written in the last user turn
// (see readRequestText: a directive shapes the one answer it was written for).
import { badRequest } from '../errors.js';

export type Directive = Record<string, string>;

export type StopReason =
  | 'end_turn'
  | 'max_tokens'
  | 'refusal'
  | 'pause_turn'
  | 'stop_sequence'
  | 'model_context_window_exceeded';

export type Fault =
  | 'status'
  | 'reset_before_headers'
  | 'reset_mid_stream'
  | 'stall_before_headers'
  | 'stall_mid_stream'
  | 'malformed_event'
  | 'error_after_200'
  | 'no_usage';

/** The merged directives that apply to one request. */
export interface SimSettings {
  /** Words of text; the answer's default when absent (see planAnswer). */
  words?: number;
  chunks?: number;
  bytes?: number;
  tools: number;
  thinking?: boolean;
  cacheRead: number;
  /** 5-minute cache writes. */
  cacheWrite: number;
  /** 1-hour cache writes (messages format only, as the vendor reports them). */
  cacheWrite1h: number;
  stop?: StopReason;
  delayMs: number;
  /** Chat streams: interleave the fragments of parallel tool calls. */
  interleave: boolean;
  fault?: Fault;
  status: number;
  retryAfter?: number;
  /** Stream events sent before a mid-stream fault. */
  after: number;
  /** Length of a stall. */
  ms: number;
}

const DIRECTIVE = /<<sim\b([^<>]*)>>/g;

/** Every `<<sim ...>>` in the text, in order, as key → value maps (bare words without `=` are ignored). */
export function parseDirectives(text: string): Directive[] {
  const out: Directive[] = [];
  for (const m of text.matchAll(DIRECTIVE)) {
    const d: Directive = {};
    for (const pair of m[1].split(/\s+/)) {
      const eq = pair.indexOf('=');
      if (eq > 0) d[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
    out.push(d);
  }
  return out;
}

const STOPS: ReadonlySet<string> = new Set<StopReason>([
  'end_turn',
  'max_tokens',
  'refusal',
  'pause_turn',
  'stop_sequence',
  'model_context_window_exceeded',
]);
const FAULTS: ReadonlySet<string> = new Set<Fault>([
  'status',
  'reset_before_headers',
  'reset_mid_stream',
  'stall_before_headers',
  'stall_mid_stream',
  'malformed_event',
  'error_after_200',
  'no_usage',
]);
const NUMERIC = ['words', 'chunks', 'bytes', 'tools', 'thinking', 'cache_read', 'cache_write', 'cache_write_1h', 'delay_ms', 'interleave', 'status', 'retry_after', 'after', 'ms'];
const KNOWN = new Set([...NUMERIC, 'model', 'stop', 'fault']);

/**
 * Merges the directives that apply to `model` (later ones win). A typo must not pass silently,
 * so an unknown key or a bad value is a 400 naming it.
 */
export function settingsFor(directives: Directive[], model: unknown): SimSettings {
  const merged: Directive = {};
  for (const d of directives) if (d.model === undefined || d.model === model) Object.assign(merged, d);
  const num: Record<string, number> = {};
  for (const [key, value] of Object.entries(merged)) {
    if (!KNOWN.has(key)) throw badRequest('invalid_directive', `Unknown simulator directive key "${key}".`);
    if (!NUMERIC.includes(key)) continue;
    if (!/^\d+$/.test(value)) throw badRequest('invalid_directive', `Simulator directive ${key}=${value} is not a whole number.`);
    num[key] = Number(value);
  }
  if (merged.stop !== undefined && !STOPS.has(merged.stop)) {
    throw badRequest('invalid_directive', `Unknown simulator stop reason "${merged.stop}".`);
  }
  if (merged.fault !== undefined && !FAULTS.has(merged.fault)) {
    throw badRequest('invalid_directive', `Unknown simulator fault "${merged.fault}".`);
  }
  const fault = merged.fault as Fault | undefined;
  return {
    words: num.words,
    chunks: num.chunks || undefined,
    bytes: num.bytes || undefined,
    tools: num.tools ?? 0,
    thinking: num.thinking === undefined ? undefined : num.thinking > 0,
    cacheRead: num.cache_read ?? 0,
    cacheWrite: num.cache_write ?? 0,
    cacheWrite1h: num.cache_write_1h ?? 0,
    stop: merged.stop as StopReason | undefined,
    delayMs: num.delay_ms ?? 0,
    interleave: (num.interleave ?? 0) > 0,
    fault,
    status: num.status ?? 503,
    retryAfter: num.retry_after,
    after: num.after ?? (fault === 'error_after_200' ? 0 : 2),
    ms: num.ms ?? 60_000,
  };
}
