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
    if (j.type === 'content_block_delta') return 'output';
    // A block start is output when it carries something itself (a tool call, redacted thinking,
    // text): an empty text start followed by an "overloaded" error must still fail over.
    if (j.type === 'content_block_start') {
      const b = j.content_block;
      return b && (b.type === 'tool_use' || b.type === 'server_tool_use' || b.type === 'redacted_thinking' || b.text || b.thinking) ? 'output' : 'other';
    }
    return 'other';
  }
  if (ev.isDone) return 'other';
  const j = ev.json;
  if (j === undefined || j === null || typeof j !== 'object') return 'malformed';
  if (j.error) return 'error';
  const d = j.choices?.[0]?.delta;
  if (d && (d.content || d.tool_calls || d.reasoning_content || d.refusal)) return 'output';
  return 'other';
}

/**
 * A whole (non-streamed) upstream body that reports an error although its status was 2xx: chat
 * `{"error": …}` without choices, messages `{"type": "error", …}`. It is a failed attempt, not an answer.
 */
export function isErrorBody(format: WireFormat, body: any): boolean {
  if (format === 'messages') return body.type === 'error';
  return body.error !== undefined && body.error !== null && !Array.isArray(body.choices);
}

/** Does this upstream event say the answer is complete (so a close after it is a proper end)? */
export function endsStream(format: WireFormat, ev: StreamEvent): boolean {
  if (format === 'messages') return ev.event === 'message_stop' || ev.json?.type === 'message_stop';
  if (ev.isDone) return true;
  const choice = ev.json?.choices?.[0];
  return choice !== undefined && choice.finish_reason !== null && choice.finish_reason !== undefined;
}

/** The human message of a parsed upstream error body of either format, if it has one. */
export function errorMessageOf(body: any): string | undefined {
  const m = body?.error?.message ?? body?.message;
  return typeof m === 'string' ? m : undefined;
}

/** The human message in an upstream error body of either format (or the raw text). */
export function upstreamErrorMessage(text: string): string {
  try {
    return errorMessageOf(JSON.parse(text)) ?? text;
  } catch {
    return text; // not JSON
  }
}

/** Same, from a parsed in-stream error event. */
export function eventErrorMessage(ev: StreamEvent): string {
  const m = ev.json?.error?.message;
  return typeof m === 'string' ? m : 'the upstream reported an error';
}
