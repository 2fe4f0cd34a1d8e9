// Test helpers for the conversions: upstream events shaped as the vendors send them, a runner for a
// StreamHook, the converted stream as SSE text, the official SDKs reading that text, and the 400s.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { StreamEvent, type StreamHook } from '../../../lib/plugin.js';
import { formatEvent } from '../../../lib/sse.js';
import { GatewayError } from '../../../lib/errors.js';

/** What `fn` threw, as {status, param} when it was a GatewayError (for t.strictSame against a 400). */
export function thrown(fn: () => unknown): { status: number; param: string | null } | string {
  try {
    fn();
    return 'nothing thrown';
  } catch (err) {
    return err instanceof GatewayError ? { status: err.status, param: err.param } : String(err);
  }
}

/** A messages-format event as it arrives from the wire: `event:` line and JSON data text. */
export const upMsg = (json: Record<string, any>): StreamEvent => new StreamEvent({ event: json.type, data: JSON.stringify(json) });
/** A chat chunk as it arrives from the wire (data only). */
export const upChunk = (json: Record<string, any>): StreamEvent => new StreamEvent({ data: JSON.stringify(json) });
export const upDone = (): StreamEvent => new StreamEvent({ data: '[DONE]' });

/** Feeds events one at a time, then onEnd (as the core does at a clean upstream end). */
export function run(hook: StreamHook, events: StreamEvent[], callEnd = true): StreamEvent[] {
  const out: StreamEvent[] = [];
  const take = (r: StreamEvent | StreamEvent[] | undefined | void) => {
    if (Array.isArray(r)) out.push(...r);
    else if (r) out.push(r);
  };
  for (const e of events) take(hook.onEvent(e));
  if (callEnd) take(hook.onEnd?.());
  return out;
}

/** Each emitted event as {event?, data} with data parsed (or '[DONE]'), for exact comparison. */
export const shape = (events: StreamEvent[]): unknown[] =>
  events.map((e) => (e.isDone ? '[DONE]' : e.event === undefined ? e.json : { event: e.event, data: e.json }));

export const sseText = (events: StreamEvent[]): string => events.map((e) => formatEvent({ event: e.event, data: e.data })).join('');

/** A fetch that answers every request with this SSE text. */
const fetchServing = (text: string) => async () =>
  new Response(text, { status: 200, headers: { 'content-type': 'text/event-stream' } });

export const anthropicServing = (text: string) =>
  new Anthropic({ apiKey: 'test', baseURL: 'http://127.0.0.1:9', maxRetries: 0, fetch: fetchServing(text) });

export const openaiServing = (text: string) =>
  new OpenAI({ apiKey: 'test', baseURL: 'http://127.0.0.1:9/v1', maxRetries: 0, fetch: fetchServing(text) });

// ---- Vendor-shaped upstream streams ----

export const anthropicUsage = (over: Record<string, number> = {}) => ({
  input_tokens: 25,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  output_tokens: 1,
  service_tier: 'standard',
  ...over,
});

export const messageStart = (usage = anthropicUsage()) =>
  upMsg({
    type: 'message_start',
    message: {
      id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
      type: 'message',
      role: 'assistant',
      model: 'claude-up',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage,
    },
  });
export const ping = () => upMsg({ type: 'ping' });
export const blockStart = (index: number, content_block: Record<string, any>) =>
  upMsg({ type: 'content_block_start', index, content_block });
export const blockDelta = (index: number, delta: Record<string, any>) => upMsg({ type: 'content_block_delta', index, delta });
export const blockStop = (index: number) => upMsg({ type: 'content_block_stop', index });
export const messageDelta = (stop_reason: string, usage: Record<string, any> = { output_tokens: 15 }) =>
  upMsg({ type: 'message_delta', delta: { stop_reason, stop_sequence: null }, usage });
export const messageStop = () => upMsg({ type: 'message_stop' });

/** What every chunk of one OpenAI stream repeats. */
const CHUNK_HEAD = {
  id: 'chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT',
  object: 'chat.completion.chunk',
  created: 1741570283,
  model: 'gpt-up',
  system_fingerprint: 'fp_06737a9306',
};
/** An OpenAI chunk; `usage: null` is present on every chunk when include_usage was asked. */
export const chunk = (delta: Record<string, any>, finish_reason: string | null = null, extra: Record<string, any> = {}) =>
  upChunk({ ...CHUNK_HEAD, choices: [{ index: 0, delta, logprobs: null, finish_reason }], usage: null, ...extra });
export const usageChunk = (usage: Record<string, any>) => upChunk({ ...CHUNK_HEAD, choices: [], usage });

/** Failure mode 7, as the tests expect it (not imported from the converters they check). */
export const STOP_TO_FINISH: [stopReason: string, finishReason: string][] = [
  ['end_turn', 'stop'],
  ['stop_sequence', 'stop'],
  ['pause_turn', 'stop'],
  ['max_tokens', 'length'],
  ['model_context_window_exceeded', 'length'],
  ['refusal', 'content_filter'],
  ['tool_use', 'tool_calls'],
];

/**
 * The messages stream rules a client relies on: message_start first; blocks strictly one after
 * another with indexes 0, 1, 2…; no delta outside its open block; message_delta then message_stop
 * last; every event's `event:` line equal to its type. Returns the list of problems (empty = good).
 */
export function messagesStreamProblems(events: StreamEvent[]): string[] {
  const problems: string[] = [];
  let open: number | undefined;
  let next = 0;
  events.forEach((e, i) => {
    const j = e.json;
    if (e.event !== j?.type) problems.push(`#${i}: event line ${e.event} but type ${j?.type}`);
    if (i === 0 && j?.type !== 'message_start') problems.push('first event is not message_start');
    switch (j?.type) {
      case 'content_block_start':
        if (open !== undefined) problems.push(`#${i}: block ${j.index} starts while ${open} is open`);
        if (j.index !== next) problems.push(`#${i}: block index ${j.index}, expected ${next}`);
        open = j.index;
        next++;
        break;
      case 'content_block_delta':
        if (j.index !== open) problems.push(`#${i}: delta for block ${j.index} while ${open} is open`);
        break;
      case 'content_block_stop':
        if (j.index !== open) problems.push(`#${i}: stop for block ${j.index} while ${open} is open`);
        open = undefined;
        break;
      case 'message_delta':
        if (open !== undefined) problems.push(`#${i}: message_delta while block ${open} is open`);
        if (i !== events.length - 2) problems.push(`#${i}: message_delta is not second to last`);
        break;
      case 'message_stop':
        if (i !== events.length - 1) problems.push(`#${i}: message_stop is not last`);
        break;
    }
  });
  if (events.at(-1)?.json?.type !== 'message_stop') problems.push('the stream does not end with message_stop');
  return problems;
}
