// An upstream attempt's failure as a label value: a short word from a fixed list. The attempt's own
// reason is free text (a network error, an upstream's words): as a label it would make one series
// per message.
import type { Attempt } from '../context.js';

/** Statuses with a label of their own; others are counted by class. */
const NAMED_STATUS = new Set([400, 401, 402, 403, 404, 408, 409, 413, 429, 500, 502, 503, 504, 529]);

/** Reason texts the attempt loop and the stream relay write (lib/attempt-loop.ts, lib/stream-relay.ts), in the order they are checked. */
const TEXT_REASONS: [RegExp, string][] = [
  [/cooling down/, 'breaker_open'],
  [/no response headers within/, 'first_byte_timeout'],
  [/idle for/, 'idle_timeout'],
  [/longer than/, 'deadline'],
  [/client closed/, 'client_gone'],
  [/\bstream\b|\bevent\b/, 'stream_error'], // not "upstream"
  [/not JSON|JSON object|error body|content type|too large/, 'bad_response'],
];

export function attemptReason(a: Attempt): string {
  if (a.outcome === 'ok') return 'none';
  if (a.outcome === 'skipped') return 'breaker_open';
  if (a.status !== undefined) {
    if (NAMED_STATUS.has(a.status)) return `http_${a.status}`;
    return a.status >= 500 ? 'http_5xx' : a.status >= 400 ? 'http_4xx' : 'http_other';
  }
  const text = a.reason ?? '';
  for (const [re, word] of TEXT_REASONS) if (re.test(text)) return word;
  return 'network';
}
