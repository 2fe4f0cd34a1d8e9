// The messages format's answer: a whole message, or its event stream (lazy: one event at a time).
import { ARGUMENT_PIECES, fullText, hasText, splitInto, textDeltas, thinkingDeltas, type Answer } from './answer.js';

export function messagesBody(a: Answer): object {
  const content: object[] = [];
  if (a.thinking) content.push({ type: 'thinking', thinking: a.thinking.text, signature: a.thinking.signature });
  if (hasText(a)) content.push({ type: 'text', text: fullText(a) });
  for (const t of a.tools) content.push({ type: 'tool_use', id: t.id, name: t.name, input: t.input });
  return {
    id: a.id,
    type: 'message',
    role: 'assistant',
    model: a.model,
    content,
    stop_reason: a.stop,
    stop_sequence: a.stopSequence,
    usage: usage(a, a.output),
  };
}

export function* messagesEvents(a: Answer): Generator<string> {
  yield event('message_start', {
    message: {
      id: a.id,
      type: 'message',
      role: 'assistant',
      model: a.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: usage(a, 1),
    },
  });
  let index = 0;
  if (a.thinking) {
    const deltas: object[] = thinkingDeltas(a.thinking.text).map((thinking) => ({ type: 'thinking_delta', thinking }));
    deltas.push({ type: 'signature_delta', signature: a.thinking.signature });
    yield* block(index++, { type: 'thinking', thinking: '', signature: '' }, deltas);
  }
  if (hasText(a)) yield* block(index++, { type: 'text', text: '' }, textDeltaEvents(a));
  for (const t of a.tools) {
    // The vendor's first input_json_delta is often empty; a tool without arguments gets only that one.
    const pieces = ['', ...(t.json === '{}' ? [] : splitInto(t.json, ARGUMENT_PIECES))];
    const deltas = pieces.map((partial_json) => ({ type: 'input_json_delta', partial_json }));
    yield* block(index++, { type: 'tool_use', id: t.id, name: t.name, input: {} }, deltas);
  }
  if (index === 0) yield event('ping', {});
  yield event('message_delta', { delta: { stop_reason: a.stop, stop_sequence: a.stopSequence }, usage: usage(a, a.output) });
  yield event('message_stop', {});
}

/** The vendor sends a ping right after the first block starts. */
function* block(index: number, start: object, deltas: Iterable<object>): Generator<string> {
  yield event('content_block_start', { index, content_block: start });
  if (index === 0) yield event('ping', {});
  for (const delta of deltas) yield event('content_block_delta', { index, delta });
  yield event('content_block_stop', { index });
}

function* textDeltaEvents(a: Answer): Generator<object> {
  for (const text of textDeltas(a)) yield { type: 'text_delta', text };
}

// formatEvent(jsonEvent(value, type)) without its intermediate object and line scans: JSON text holds no line break.
const event = (type: string, data: object): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/** Cumulative usage; `fault=no_usage` zeroes it. */
function usage(a: Answer, output: number): object {
  const none = a.settings.fault === 'no_usage';
  return {
    input_tokens: none ? 0 : a.input,
    // All cache writes, split by lifetime as the vendor does.
    cache_creation_input_tokens: none ? 0 : a.cacheWrite + a.cacheWrite1h,
    cache_read_input_tokens: none ? 0 : a.cacheRead,
    cache_creation: { ephemeral_5m_input_tokens: none ? 0 : a.cacheWrite, ephemeral_1h_input_tokens: none ? 0 : a.cacheWrite1h },
    output_tokens: none ? 0 : output,
  };
}
