// Chat upstream chunks → messages-format events, checked event by event and through the Anthropic SDK.
import t from 'tap';
import fc from 'fast-check';
import { ChatToMessagesStream } from '../../../plugins/format-transform/stream-chat-to-messages.js';
import { errorEvent, GatewayError } from '../../../lib/errors.js';
import { anthropicServing, chunk, messagesStreamProblems, run, shape, sseText, upDone, usageChunk } from './fixtures.js';

const MODEL = 'test/gpt';
/** The gateway's input estimate, for message_start; message_delta brings the upstream's count. */
const ESTIMATE = 17;
const hook = () => new ChatToMessagesStream({ model: MODEL, inputTokens: ESTIMATE });
const e = (type: string, rest: Record<string, any> = {}) => ({ event: type, data: { type, ...rest } });
const start = e('message_start', {
  message: {
    id: 'msg_chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT',
    type: 'message',
    role: 'assistant',
    model: MODEL,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: ESTIMATE, output_tokens: 0 },
  },
});
const usage = { prompt_tokens: 19, completion_tokens: 10, total_tokens: 29, prompt_tokens_details: { cached_tokens: 0 } };

t.test('a text answer, with the usage chunk after finish_reason (failure mode 8: message_delta held until usage); the input estimate, then the true count', async (t) => {
  const h = hook();
  const first = run(h, [chunk({ role: 'assistant', content: '', refusal: null }), chunk({ content: 'Hello' }), chunk({ content: ' there' })], false);
  const fin = run(h, [chunk({}, 'stop')], false);
  t.notOk(shape(fin).some((x: any) => x.event === 'message_delta'), 'finish_reason alone does not end the message');
  const rest = run(h, [usageChunk(usage), upDone()]);
  t.strictSame(shape([...first, ...fin, ...rest]), [
    start,
    e('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    e('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hello' } }),
    e('content_block_delta', { index: 0, delta: { type: 'text_delta', text: ' there' } }),
    e('content_block_stop', { index: 0 }),
    e('message_delta', {
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { input_tokens: 19, output_tokens: 10, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
    }),
    e('message_stop'),
  ]);
});

t.test('failure mode 11: every event has an event: line equal to its type', async (t) => {
  const out = run(hook(), [chunk({ role: 'assistant', content: 'Hi' }), chunk({}, 'stop'), upDone()]);
  t.strictSame(messagesStreamProblems(out), []);
  t.match(sseText(out), /^event: message_start\ndata: /);
});

t.test('failure mode 9: cached tokens leave input_tokens for cache_read_input_tokens', async (t) => {
  const out = shape(
    run(hook(), [
      chunk({ content: 'x' }),
      chunk({}, 'stop'),
      usageChunk({ prompt_tokens: 1200, completion_tokens: 7, total_tokens: 1207, prompt_tokens_details: { cached_tokens: 1024 } }),
      upDone(),
    ]),
  );
  t.strictSame((out.at(-2) as any).data.usage, { input_tokens: 176, output_tokens: 7, cache_read_input_tokens: 1024, cache_creation_input_tokens: 0 });
});

t.test('failure modes 1 and 4: name and first arguments in one chunk; a call without arguments', async (t) => {
  const out = run(hook(), [
    chunk({ role: 'assistant', content: null }),
    chunk({ tool_calls: [{ index: 0, id: 'call_DdmO9pD3xa9XTPNJ32zg2hcA', type: 'function', function: { name: 'get_weather', arguments: '{"loc' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: 'ation":"Paris"}' } }] }),
    chunk({ tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '' } }] }),
    chunk({}, 'tool_calls'),
    upDone(),
  ]);
  t.strictSame(messagesStreamProblems(out), []);
  t.strictSame(shape(out).slice(1), [
    e('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'call_DdmO9pD3xa9XTPNJ32zg2hcA', name: 'get_weather', input: {} } }),
    e('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: '{"loc' } }),
    e('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: 'ation":"Paris"}' } }),
    e('content_block_stop', { index: 0 }),
    e('content_block_start', { index: 1, content_block: { type: 'tool_use', id: 'call_2', name: 'get_time', input: {} } }),
    e('content_block_stop', { index: 1 }),
    e('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 0 } }),
    e('message_stop'),
  ]);
});

t.test('failure mode 1: arguments that arrive only at the end, in the finish chunk, are kept', async (t) => {
  const out = shape(
    run(hook(), [
      chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a":1}' } }] }, 'tool_calls'),
      upDone(),
    ]),
  );
  t.strictSame(out[2], e('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: '{"a":1}' } }));
  t.strictSame(out[3], e('content_block_stop', { index: 0 }));
});

t.test('failure mode 3: interleaved fragments of two calls — one block per call, no delta after its stop', async (t) => {
  const out = run(hook(), [
    chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"x"' } }] }),
    chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'g', arguments: '{"y"' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }),
    chunk({ tool_calls: [{ index: 1, function: { arguments: ':2}' } }] }),
    chunk({}, 'tool_calls'),
    upDone(),
  ]);
  t.strictSame(messagesStreamProblems(out), []);
  t.strictSame(shape(out).slice(1, -2), [
    e('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'call_a', name: 'f', input: {} } }),
    e('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: '{"x"' } }),
    e('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: ':1}' } }),
    e('content_block_stop', { index: 0 }),
    e('content_block_start', { index: 1, content_block: { type: 'tool_use', id: 'call_b', name: 'g', input: {} } }),
    e('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '{"y":2}' } }),
    e('content_block_stop', { index: 1 }),
  ]);
  const msg = await anthropicServing(sseText(out)).messages.stream({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).finalMessage();
  t.strictSame(msg.content.map((b: any) => b.input), [{ x: 1 }, { y: 2 }]);
});

t.test('several complete tool calls in one chunk (as some providers send them)', async (t) => {
  const out = run(hook(), [
    chunk({
      tool_calls: [
        { index: 0, id: 'call_a', type: 'function', function: { name: 'f', arguments: '{}' } },
        { index: 1, id: 'call_b', type: 'function', function: { name: 'g', arguments: '{"k":"v"}' } },
      ],
    }),
    chunk({}, 'tool_calls'),
    upDone(),
  ]);
  t.strictSame(messagesStreamProblems(out), []);
  const msg = await anthropicServing(sseText(out)).messages.stream({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).finalMessage();
  t.strictSame(msg.content.map((b: any) => [b.id, b.name, b.input]), [['call_a', 'f', {}], ['call_b', 'g', { k: 'v' }]]);
});

t.test('failure mode 14: tool-call ids with refused characters are sanitized', async (t) => {
  const out = shape(
    run(hook(), [chunk({ tool_calls: [{ index: 0, id: 'functions.get_weather:0', type: 'function', function: { name: 'get_weather', arguments: '' } }] }), chunk({}, 'tool_calls'), upDone()]),
  );
  t.equal((out[1] as any).data.content_block.id, 'functions_get_weather_0');
});

t.test('failure mode 6: reasoning deltas, then the whole entry with its signature, become one signed thinking block', async (t) => {
  const out = run(hook(), [
    chunk({ role: 'assistant', content: '', refusal: null }),
    chunk({ reasoning_content: 'Think' }),
    chunk({ reasoning_content: 'ing.' }),
    chunk({ reasoning_details: [{ type: 'thinking', thinking: 'Thinking.', signature: 'c2lnbmF0dXJl' }] }),
    chunk({ content: 'Answer' }),
    chunk({}, 'stop'),
    usageChunk(usage),
    upDone(),
  ]);
  t.strictSame(messagesStreamProblems(out), []);
  t.strictSame(shape(out).slice(1, 8), [
    e('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
    e('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'Think' } }),
    e('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'ing.' } }),
    e('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'c2lnbmF0dXJl' } }),
    e('content_block_stop', { index: 0 }),
    e('content_block_start', { index: 1, content_block: { type: 'text', text: '' } }),
    e('content_block_delta', { index: 1, delta: { type: 'text_delta', text: 'Answer' } }),
  ]);
  const msg = await anthropicServing(sseText(out)).messages.stream({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).finalMessage();
  t.strictSame(msg.content[0], { type: 'thinking', thinking: 'Thinking.', signature: 'c2lnbmF0dXJl' });
});

t.test('reasoning only as whole reasoning_details entries (thinking and redacted)', async (t) => {
  const out = run(hook(), [
    chunk({ reasoning_details: [{ type: 'thinking', thinking: 'Whole.', signature: 'sig' }, { type: 'redacted_thinking', data: 'opaque' }] }),
    chunk({ content: 'ok' }, 'stop'),
    upDone(),
  ]);
  t.strictSame(messagesStreamProblems(out), []);
  const msg = await anthropicServing(sseText(out)).messages.stream({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).finalMessage();
  t.strictSame(msg.content, [
    { type: 'thinking', thinking: 'Whole.', signature: 'sig' },
    { type: 'redacted_thinking', data: 'opaque' },
    { type: 'text', text: 'ok' },
  ]);
});

t.test('failure mode 7: finish reasons map; tool calls make a tool_use turn whatever finish_reason says', async (t) => {
  const cases: [string, string][] = [
    ['stop', 'end_turn'],
    ['length', 'max_tokens'],
    ['tool_calls', 'tool_use'],
    ['content_filter', 'refusal'],
  ];
  for (const [finish, stop] of cases) {
    const out = shape(run(hook(), [chunk({ content: 'x' }, finish), upDone()]));
    t.equal((out.at(-2) as any).data.delta.stop_reason, stop, `${finish} → ${stop}`);
  }
  const out = shape(run(hook(), [chunk({ tool_calls: [{ index: 0, id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] }, 'stop'), upDone()]));
  t.equal((out.at(-2) as any).data.delta.stop_reason, 'tool_use');
});

t.test('failure mode 10: content sharing a chunk with finish_reason is kept; a stream without [DONE] still ends', async (t) => {
  const out = run(hook(), [chunk({ role: 'assistant', content: 'All in one' }, 'stop')]);
  t.strictSame(messagesStreamProblems(out), []);
  t.strictSame(shape(out)[2], e('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'All in one' } }));
  const empty = run(hook(), []);
  t.strictSame(
    shape(empty).map((x: any) => x.event),
    ['message_start', 'message_delta', 'message_stop'],
    'even an empty upstream stream ends properly',
  );
  const h = hook();
  run(h, [chunk({ content: 'x' }, 'stop'), upDone()]);
  t.same(h.onEnd(), undefined, 'nothing after the end');
  t.same(h.onEvent(chunk({ content: 'late' })), undefined, 'nothing after the end');
});

t.test('failure mode 8: no usage from the upstream still gives a well-formed message_delta', async (t) => {
  const out = shape(run(hook(), [chunk({ content: 'x' }), chunk({}, 'stop'), upDone()]));
  t.strictSame((out.at(-2) as any).data.usage, { output_tokens: 0 });
});

t.test('the Anthropic SDK accumulates the converted stream (MessageStream.finalMessage)', async (t) => {
  const out = run(hook(), [
    chunk({ role: 'assistant', content: '', refusal: null }),
    chunk({ reasoning_content: 'Hmm.' }),
    chunk({ reasoning_details: [{ type: 'thinking', thinking: 'Hmm.', signature: 'S1' }] }),
    chunk({ content: 'Let me look.' }),
    chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"q":"a"}' } }] }),
    chunk({}, 'tool_calls'),
    usageChunk({ prompt_tokens: 50, completion_tokens: 20, total_tokens: 70, prompt_tokens_details: { cached_tokens: 10 } }),
    upDone(),
  ]);
  const msg = await anthropicServing(sseText(out)).messages.stream({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'x' }] }).finalMessage();
  t.equal(msg.model, MODEL);
  t.equal(msg.stop_reason, 'tool_use');
  t.strictSame(msg.content, [
    { type: 'thinking', thinking: 'Hmm.', signature: 'S1' },
    { type: 'text', text: 'Let me look.' },
    { type: 'tool_use', id: 'call_1', name: 'lookup', input: { q: 'a' } },
  ]);
  t.equal(msg.usage.input_tokens, 40);
  t.equal(msg.usage.cache_read_input_tokens, 10);
  t.equal(msg.usage.output_tokens, 20);
});

t.test('failure mode 12: an error after output reaches a messages client as event: error, and the SDK throws', async (t) => {
  const partial = run(hook(), [chunk({ content: 'partial' })], false);
  const err = new GatewayError(529, 'overloaded_error', 'upstream_overloaded', 'Overloaded');
  t.match(errorEvent(err, 'messages'), /^event: error\ndata: \{"type":"error","error":\{"type":"overloaded_error"/);
  const stream = anthropicServing(sseText(partial) + errorEvent(err, 'messages')).messages.stream({
    model: MODEL,
    max_tokens: 10,
    messages: [{ role: 'user', content: 'x' }],
  });
  await t.rejects(stream.finalMessage(), /Overloaded/);
});

t.test('property: any split and interleaving of tool-call fragments gives well-formed blocks with the exact inputs', async (t) => {
  const call = fc.record({
    input: fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), fc.oneof(fc.string(), fc.integer(), fc.boolean()), { maxKeys: 4 }),
    cuts: fc.array(fc.nat(), { maxLength: 5 }),
  });
  await fc.assert(
    fc.asyncProperty(fc.array(call, { minLength: 1, maxLength: 4 }), fc.array(fc.nat(), { maxLength: 40 }), fc.boolean(), async (calls, order, leadingText) => {
      // Each call's arguments cut into fragments; the first fragment names the call.
      const queues = calls.map((c, index) => {
        const json = JSON.stringify(c.input);
        const points = [...new Set(c.cuts.map((n) => n % (json.length + 1)))].sort((a, b) => a - b);
        const pieces = [0, ...points, json.length].slice(1).map((end, k, ends) => json.slice(k === 0 ? 0 : ends[k - 1], end));
        return pieces.map((args, k) =>
          k === 0 ? { index, id: `call_${index}`, type: 'function', function: { name: `f${index}`, arguments: args } } : { index, function: { arguments: args } },
        );
      });
      // Interleave: the first fragment of call i comes before any fragment of call i+1 (as vendors number them).
      const fragments: any[] = [];
      let started = 0;
      let pick = 0;
      while (queues.some((q) => q.length > 0)) {
        const open = queues.map((q, i) => (q.length > 0 && i <= started ? i : -1)).filter((i) => i >= 0);
        const i = open.length > 0 ? open[(order[pick++ % Math.max(order.length, 1)] ?? 0) % open.length] : started;
        fragments.push(queues[i].shift());
        if (i === started && started < queues.length - 1) started++;
      }
      const events = [
        ...(leadingText ? [chunk({ role: 'assistant', content: 'Let me see.' })] : []),
        ...fragments.map((f) => chunk({ tool_calls: [f] })),
        chunk({}, 'tool_calls'),
        upDone(),
      ];
      const out = run(hook(), events);
      const problems = messagesStreamProblems(out);
      if (problems.length > 0) throw new Error(problems.join('; '));
      const msg = await anthropicServing(sseText(out)).messages.stream({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).finalMessage();
      const got = JSON.stringify(msg.content.filter((b: any) => b.type === 'tool_use').map((u: any) => [u.id, u.name, u.input]));
      const want = JSON.stringify(calls.map((c, i) => [`call_${i}`, `f${i}`, c.input]));
      if (got !== want) throw new Error(`tool calls ${got}, expected ${want}`);
    }),
    { numRuns: 100 },
  );
  t.pass('100 random streams accumulated exactly');
});
