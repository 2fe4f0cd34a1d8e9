// The few wire-format facts the core needs: upstream paths and credentials, which upstream
// stream events carry output or report an error, and the message inside an upstream error body.
import type { WireFormat } from './config-types.js';
import type { Route, Provider } from './context.js';
import type { StreamEvent } from './plugin.js';
import type { IncomingHttpHeaders } from 'node:http';
import type { ErrorType } from './errors.js';

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
    if (ev.textDelta) return 'output';
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
  if (ev.textDelta) return ev.textDelta.text ? 'output' : 'other';
  const j = ev.json;
  if (j === undefined || j === null || typeof j !== 'object') return 'malformed';
  if (j.error) return 'error';
  const d = j.choices?.[0]?.delta;
  // `reasoning`: the field some chat vendors (Groq, OpenRouter) stream reasoning in.
  if (d && (d.content || d.tool_calls || d.reasoning_content || d.reasoning || d.refusal)) return 'output';
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
  if (format === 'messages') return ev.event === 'message_stop' || (!ev.textDelta && ev.json?.type === 'message_stop');
  if (ev.isDone) return true;
  if (ev.textDelta) return false;
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

/** An error an upstream reported inside a stream, in the gateway's (the messages format's) vocabulary. */
export interface VendorError {
  type: ErrorType;
  /** The vendor's own message (untrusted text: scrub it before it goes anywhere). */
  message: string;
  /** The vendor's own type or code, when it has the shape of one. */
  code?: string;
}

const MESSAGES_TYPES = new Set<string>([
  'invalid_request_error', 'authentication_error', 'permission_error', 'not_found_error', 'request_too_large',
  'billing_error', 'rate_limit_error', 'api_error', 'overloaded_error', 'timeout_error',
]);

/**
 * Chat-format (OpenAI-style) error types and codes → the nearest messages-format type. A chat
 * vendor's `server_error` is its "try again later", as `overloaded_error` is the messages format's.
 */
const FROM_CHAT: Record<string, ErrorType> = {
  invalid_request_error: 'invalid_request_error',
  context_length_exceeded: 'invalid_request_error',
  authentication_error: 'authentication_error',
  invalid_api_key: 'authentication_error',
  permission_error: 'permission_error',
  not_found_error: 'not_found_error',
  model_not_found: 'not_found_error',
  insufficient_quota: 'billing_error',
  rate_limit_error: 'rate_limit_error',
  rate_limit_exceeded: 'rate_limit_error',
  requests: 'rate_limit_error',
  tokens: 'rate_limit_error',
  server_error: 'overloaded_error',
  service_unavailable: 'overloaded_error',
  overloaded: 'overloaded_error',
  engine_overloaded: 'overloaded_error',
  api_error: 'api_error',
  timeout: 'timeout_error',
};

const CODE_SHAPE = /^[A-Za-z0-9_.-]{1,64}$/;

/** The error in a parsed upstream error event (or error body) of the upstream's format. */
export function vendorErrorOf(format: WireFormat, json: any): VendorError {
  const e = json?.error;
  const message = typeof e?.message === 'string' && e.message !== '' ? e.message : 'the upstream reported an error';
  const vendorType = typeof e?.type === 'string' ? e.type : undefined;
  const vendorCode = typeof e?.code === 'string' ? e.code : undefined;
  let type: ErrorType | undefined;
  if (format === 'messages') type = vendorType !== undefined && MESSAGES_TYPES.has(vendorType) ? (vendorType as ErrorType) : undefined;
  else type = (vendorType !== undefined ? FROM_CHAT[vendorType] : undefined) ?? (vendorCode !== undefined ? FROM_CHAT[vendorCode] : undefined);
  const code = [vendorCode, vendorType].find((c) => c !== undefined && CODE_SHAPE.test(c));
  return { type: type ?? 'api_error', message, code };
}

/**
 * The upstream's own Retry-After, in milliseconds: `retry-after-ms` (OpenAI), else `retry-after` in
 * seconds or as an HTTP date. Undefined when absent or unreadable.
 */
export function retryAfterMsOf(headers: IncomingHttpHeaders, now = Date.now()): number | undefined {
  const ms = headers['retry-after-ms'];
  if (typeof ms === 'string' && /^\d+(\.\d+)?$/.test(ms.trim())) return Number(ms.trim());
  const value = headers['retry-after'];
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Number(v) * 1000;
  // An HTTP date names its weekday and month (Date.parse alone would also read "-3" as a year).
  const at = /[A-Za-z]{3}/.test(v) ? Date.parse(v) : NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
