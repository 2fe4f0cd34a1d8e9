// The stream converters take a plain text delta (lib/text-delta.ts) without parsing it and write
// its converted event out as text: the client must get byte for byte what the parsed path sends,
// which is JSON.stringify's text of the event.
import t, { type Test } from 'tap';
import type { WireFormat } from '../../../lib/config-types.js';
import { StreamEvent, type StreamHook } from '../../../lib/plugin.js';
import { formatEvent, type SseEvent } from '../../../lib/sse.js';
import { MessagesToChatStream } from '../../../plugins/format-transform/stream-messages-to-chat.js';
import { ChatToMessagesStream } from '../../../plugins/format-transform/stream-chat-to-messages.js';
import { loadRecordings, parseSse } from '../../helpers/replay.js';
import { run } from './fixtures.js';

/** The converter from an upstream of `format` to a client of the other one. */
const converter = (format: WireFormat): StreamHook =>
  format === 'messages'
    ? new MessagesToChatStream({ model: 'test/claude', created: 1700000000, includeUsage: true })
    : new ChatToMessagesStream({ model: 'test/gpt', inputTokens: 42 });

/** What the client gets from `events`: tagged as the relay tags upstream events, or as plain events (parsed). */
function converted(format: WireFormat, events: SseEvent[], tagged: boolean): { text: string; tags: number; out: StreamEvent[] } {
  const input = events.map((e) => (tagged ? new StreamEvent(e, format) : new StreamEvent(e)));
  const out = run(converter(format), input);
  return { text: out.map(formatEvent).join(''), tags: input.filter((e) => e.textDelta).length, out };
}

/** Every event a converter writes is JSON.stringify's text of what it says. */
function checkCanonical(t: Test, out: StreamEvent[], what: string): void {
  for (const e of out) {
    if (e.isDone) continue;
    const data = e.data;
    if (data !== JSON.stringify(JSON.parse(data))) t.fail(`${what}: an event is not written as JSON.stringify writes it`, { data });
  }
}

t.test("the vendors' recorded streams convert the same whether their text deltas are parsed or not", async (t) => {
  let tags = 0;
  for (const r of loadRecordings().filter((r) => r.stream && r.status === 200)) {
    const events = parseSse(r.body);
    const fast = converted(r.format, events, true);
    const parsed = converted(r.format, events, false);
    t.equal(fast.text, parsed.text, `${r.name}: the same bytes`);
    checkCanonical(t, fast.out, r.name);
    tags += fast.tags;
  }
  t.ok(tags > 50, `text deltas were taken unparsed (${tags})`);
});

/** Texts JSON escapes in different ways: quotes, backslashes, control characters, separators, a lone surrogate. */
const TEXTS = ['plain', 'a "quoted" \\ path', 'line\nbreak\ttab\u0001', 'sep\u2028ar\u2029ator', 'é ü 日本 🙂', 'half \ud800 pair', '</script>', 'x'];

const messagesEvents = (texts: string[]): SseEvent[] =>
  [
    { type: 'message_start', message: { id: 'msg_01', type: 'message', role: 'assistant', model: 'claude', content: [], usage: { input_tokens: 5, output_tokens: 1 } } },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    ...texts.map((text) => ({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })),
    // A delta of a block that is not text, and of one that never started: dropped either way.
    { type: 'content_block_delta', index: 7, delta: { type: 'text_delta', text: 'lost' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 9 } },
    { type: 'message_stop' },
  ].map((j) => ({ event: j.type, data: JSON.stringify(j) }));

const chatEvents = (texts: string[]): SseEvent[] => {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    ({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1766084443, model: 'gpt-4o', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
  return [
    chunk({ role: 'assistant', content: '' }),
    ...texts.map((content) => chunk({ content })),
    chunk({}, 'stop'),
    { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1766084443, model: 'gpt-4o', choices: [], usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 } },
  ]
    .map((j) => ({ data: JSON.stringify(j) }))
    .concat({ data: '[DONE]' });
};

t.test('texts that need escaping convert to the same bytes, as JSON.stringify writes them', async (t) => {
  for (const [format, events] of [['messages', messagesEvents(TEXTS)], ['chat', chatEvents(TEXTS)]] as const) {
    const fast = converted(format, events, true);
    const parsed = converted(format, events, false);
    t.equal(fast.tags, TEXTS.length + (format === 'messages' ? 1 : 0), `${format}: every text delta is tagged`);
    t.equal(fast.text, parsed.text, `${format}: the same bytes`);
    checkCanonical(t, fast.out, format);
  }
});

t.test('a chat stream that opens with a text delta is parsed until it started (its id comes from the chunk)', async (t) => {
  const events = chatEvents(['first', 'second']).slice(1); // no role chunk
  const fast = converted('chat', events, true);
  t.equal(fast.text, converted('chat', events, false).text);
  t.match(fast.text, /"id":"msg_chatcmpl-1"/);
});
