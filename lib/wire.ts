// The few wire-format facts the core needs: upstream paths and credentials, which upstream
// stream events carry output or report an error, and the message inside an upstream error body.
import type { WireFormat } from './config-types.js';
import type { Route, Provider } from './context.js';
import type { StreamEvent } from './plugin.js';

export function upstreamPath(format: WireFormat, route: Route): string {
  if (format === 'chat') return '/chat/completions';
  return route === 'count_tokens' ? '/v1/messages/count_tokens' : '/v1/messages';
}

export function credentialHeaders(p: Provider): Record<string, string> {
  if (p.format === 'chat') return p.api_key ? { authorization: `Bearer ${p.api_key}` } : {};
  const h: Record<string, string> = { 'anthropic-version': p.anthropic_version ?? '2023-06-01' };
  if (p.api_key) h['x-api-key'] = p.api_key;
  return h;
}

export type EventKind = 'output' | 'error' | 'malformed' | 'other';

/** Classify one upstream event (in the upstream's own format) for commit and failure decisions. */
export function classifyEvent(format: WireFormat, ev: StreamEvent): EventKind {
  if (format === 'messages') {
    if (ev.event === 'error') return 'error';
    const j = ev.json;
    if (j === undefined || j === null || typeof j !== 'object') return 'malformed';
    if (j.type === 'error') return 'error';
    return j.type === 'content_block_start' || j.type === 'content_block_delta' ? 'output' : 'other';
  }
  if (ev.isDone) return 'other';
  const j = ev.json;
  if (j === undefined || j === null || typeof j !== 'object') return 'malformed';
  if (j.error) return 'error';
  const d = j.choices?.[0]?.delta;
  if (d && (d.content || d.tool_calls || d.reasoning_content || d.refusal)) return 'output';
  return 'other';
}

/** The human message in an upstream error body of either format (or the raw text, shortened). */
export function upstreamErrorMessage(text: string): string {
  try {
    const j = JSON.parse(text);
    const m = j?.error?.message ?? j?.message;
    if (typeof m === 'string') return m;
  } catch {
    /* not JSON */
  }
  return text.length > 300 ? text.slice(0, 300) + '…' : text;
}

/** Same, from a parsed in-stream error event. */
export function eventErrorMessage(ev: StreamEvent): string {
  const m = ev.json?.error?.message;
  return typeof m === 'string' ? m : 'the upstream reported an error';
}
