// The chat-completions format's answer: a whole completion, or its chunk stream (lazy: one chunk at a time).
import { formatEvent, jsonEvent } from '../sse.js';
import type { StopReason } from './directives.js';
import { ARGUMENT_PIECES, fullText, hasText, splitInto, textDeltas, thinkingDeltas, type Answer } from './answer.js';

const FINISH: Record<StopReason | 'tool_use', string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  refusal: 'content_filter',
  tool_use: 'tool_calls',
};

export function chatBody(a: Answer): object {
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: hasText(a) ? fullText(a) : a.tools.length > 0 ? null : '',
    refusal: null,
  };
  if (a.thinking) {
    message.reasoning_content = a.thinking.text;
    message.reasoning_details = [{ type: 'thinking', thinking: a.thinking.text, signature: a.thinking.signature }];
  }
  if (a.tools.length > 0) {
    message.tool_calls = a.tools.map((t) => ({ id: t.id, type: 'function', function: { name: t.name, arguments: t.json } }));
  }
  const completion: Record<string, unknown> = {
    id: a.id,
    object: 'chat.completion',
    created: a.created,
    model: a.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: FINISH[a.stop] }],
  };
  if (a.settings.fault !== 'no_usage') completion.usage = usage(a);
  return completion;
}

/**
 * Chunks: role first, reasoning (then one chunk with the whole reasoning_details entry, which carries
 * the signature), content, tool-call fragments, finish_reason, the usage chunk if asked, [DONE].
 */
export function* chatEvents(a: Answer, includeUsage: boolean): Generator<string> {
  // The envelope around each delta is serialized once per stream, not per chunk (a tenth of a
  // stream's own cost): the bytes of data({ id, object, created, model, choices: [{ index: 0,
  // delta, logprobs: null, finish_reason }], usage: null }), in that key order.
  const head = `data: {"id":${JSON.stringify(a.id)},"object":"chat.completion.chunk","created":${JSON.stringify(a.created)},"model":${JSON.stringify(a.model)},"choices":[{"index":0,"delta":`;
  const end = `}]${includeUsage ? ',"usage":null' : ''}}\n\n`;
  const chunk = (delta: object, finish: string | null = null) => `${head}${JSON.stringify(delta)},"logprobs":null,"finish_reason":${JSON.stringify(finish)}${end}`;
  yield chunk({ role: 'assistant', content: '', refusal: null });
  if (a.thinking) {
    for (const reasoning_content of thinkingDeltas(a.thinking.text)) yield chunk({ reasoning_content });
    const { text: thinking, signature } = a.thinking;
    yield chunk({ reasoning_details: [{ type: 'thinking', thinking, signature }] });
  }
  for (const content of textDeltas(a)) yield chunk({ content });
  for (const fragment of toolFragments(a)) yield chunk({ tool_calls: [fragment] });
  yield chunk({}, FINISH[a.stop]);
  if (includeUsage && a.settings.fault !== 'no_usage') {
    yield data({ id: a.id, object: 'chat.completion.chunk', created: a.created, model: a.model, choices: [], usage: usage(a) });
  }
  yield 'data: [DONE]\n\n';
}

/** The first fragment of a call names it and carries the first piece of its arguments ("" when it has none). */
function toolFragments(a: Answer): object[] {
  const calls = a.tools.map((t, index) =>
    (t.json === '{}' ? [''] : splitInto(t.json, ARGUMENT_PIECES)).map((args, k) =>
      k === 0
        ? { index, id: t.id, type: 'function', function: { name: t.name, arguments: args } }
        : { index, function: { arguments: args } },
    ),
  );
  if (!a.settings.interleave) return calls.flat();
  const out: object[] = [];
  for (let k = 0; k < ARGUMENT_PIECES; k++) for (const pieces of calls) if (k < pieces.length) out.push(pieces[k]);
  return out;
}

/** Chat usage: prompt_tokens includes the cached tokens (the format has no cache-write count). */
function usage(a: Answer): object {
  const prompt = a.input + a.cacheRead;
  return {
    prompt_tokens: prompt,
    completion_tokens: a.output,
    total_tokens: prompt + a.output,
    prompt_tokens_details: { cached_tokens: a.cacheRead, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: a.thinking?.words ?? 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

const data = (value: object): string => formatEvent(jsonEvent(value));
