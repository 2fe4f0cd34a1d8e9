// Messages-format upstream events → chat chunks, checked event by event and through the OpenAI SDK.
import t from 'tap';
import fc from 'fast-check';
import { MessagesToChatStream } from '../../../plugins/format-transform/stream-messages-to-chat.js';
import { errorEvent, GatewayError } from '../../../lib/errors.js';
import {
  anthropicUsage,
  blockDelta,
  blockStart,
  blockStop,
  messageDelta,
  messageStart,
  messageStop,
  openaiServing,
  ping,
  run,
  shape,
  sseText,
  STOP_TO_FINISH,
} from './fixtures.js';

const MODEL = 'test/claude';
const CREATED = 1700000000;
const ID = 'chatcmpl-msg_01XFDUDYJgAACzvnptvVoYEL';
const hook = (includeUsage = false) => new MessagesToChatStream({ model: MODEL, created: CREATED, includeUsage });
const c = (delta: Record<string, any>, finish_reason: string | null = null) => ({
  id: ID,
  object: 'chat.completion.chunk',
  created: CREATED,
  model: MODEL,
  choices: [{ index: 0, delta, finish_reason }],
});

const textStream = () => [
  messageStart(),
  blockStart(0, { type: 'text', text: '' }),
  ping(),
  blockDelta(0, { type: 'text_delta', text: 'Hello' }),
  blockDelta(0, { type: 'text_delta', text: ' world' }),
  blockStop(0),
  messageDelta('end_turn', { output_tokens: 15 }),
  messageStop(),
];

t.test('a text answer: role chunk, content deltas, finish, usage chunk when asked, [DONE]', async (t) => {
  const out = run(hook(true), textStream());
  t.strictSame(shape(out), [
    c({ role: 'assistant', content: '' }),
    c({ content: 'Hello' }),
    c({ content: ' world' }),
    c({}, 'stop'),
    {
      id: ID,
      object: 'chat.completion.chunk',
      created: CREATED,
      model: MODEL,
      choices: [],
      usage: { prompt_tokens: 25, completion_tokens: 15, total_tokens: 40, prompt_tokens_details: { cached_tokens: 0 } },
    },
    '[DONE]',
  ]);
  t.ok(out.every((e) => e.event === undefined), 'chat chunks carry no event: line');
});

t.test('failure mode 8: the usage chunk goes only to a client that asked for it', async (t) => {
  const out = shape(run(hook(false), textStream()));
  t.equal(out.length, 5);
  t.notOk(out.some((x: any) => x?.usage), 'no usage chunk');
  t.equal(out.at(-1), '[DONE]');
});

t.test('failure mode 8: cumulative usage — the latest message_delta counts win, message_start counts kept', async (t) => {
  const out = run(hook(true), [
    messageStart(anthropicUsage({ input_tokens: 100, output_tokens: 1 })),
    blockStart(0, { type: 'text', text: '' }),
    blockDelta(0, { type: 'text_delta', text: 'x' }),
    blockStop(0),
    messageDelta('end_turn', { input_tokens: 120, output_tokens: 42, cache_read_input_tokens: null }),
    messageStop(),
  ]);
  const usage = (shape(out).at(-2) as any).usage;
  t.strictSame(usage, { prompt_tokens: 120, completion_tokens: 42, total_tokens: 162, prompt_tokens_details: { cached_tokens: 0 } });
});

t.test('failure mode 9: cache reads and writes are part of prompt_tokens, reads are cached_tokens', async (t) => {
  const out = run(hook(true), [
    messageStart(anthropicUsage({ input_tokens: 10, cache_read_input_tokens: 1000, cache_creation_input_tokens: 200 })),
    messageDelta('end_turn', { output_tokens: 5 }),
    messageStop(),
  ]);
  t.strictSame((shape(out).at(-2) as any).usage, {
    prompt_tokens: 1210,
    completion_tokens: 5,
    total_tokens: 1215,
    prompt_tokens_details: { cached_tokens: 1000 },
  });
});

const toolStream = () => [
  messageStart(),
  blockStart(0, { type: 'thinking', thinking: '', signature: '' }),
  blockDelta(0, { type: 'thinking_delta', thinking: 'Let me ' }),
  blockDelta(0, { type: 'thinking_delta', thinking: 'check.' }),
  blockDelta(0, { type: 'signature_delta', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3h' }),
  blockStop(0),
  blockStart(1, { type: 'text', text: '' }),
  blockDelta(1, { type: 'text_delta', text: 'Checking.' }),
  blockStop(1),
  blockStart(2, { type: 'tool_use', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', input: {} }),
  blockDelta(2, { type: 'input_json_delta', partial_json: '' }),
  blockDelta(2, { type: 'input_json_delta', partial_json: '{"location": "San' }),
  blockDelta(2, { type: 'input_json_delta', partial_json: ' Francisco"}' }),
  blockStop(2),
  blockStart(3, { type: 'tool_use', id: 'toolu_02', name: 'get_time', input: {} }),
  blockDelta(3, { type: 'input_json_delta', partial_json: '' }),
  blockStop(3),
  messageDelta('tool_use', { output_tokens: 89 }),
  messageStop(),
];

t.test('failure modes 1, 2, 3, 4, 6: thinking, text, then two tool calls', async (t) => {
  const out = shape(run(hook(), toolStream()));
  t.strictSame(out, [
    c({ role: 'assistant', content: '' }),
    c({ reasoning_content: 'Let me ' }),
    c({ reasoning_content: 'check.' }),
    c({ reasoning_details: [{ type: 'thinking', thinking: 'Let me check.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3h' }] }),
    c({ content: 'Checking.' }),
    // 2: tool_calls index counts tool calls from 0, not the block index (2).
    c({ tool_calls: [{ index: 0, id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
    // 1: the arguments travel as tool_calls fragments, the empty first input_json_delta sends nothing.
    c({ tool_calls: [{ index: 0, function: { arguments: '{"location": "San' } }] }),
    c({ tool_calls: [{ index: 0, function: { arguments: ' Francisco"}' } }] }),
    // 3 and 4: the second call is its own index; without arguments it stays "".
    c({ tool_calls: [{ index: 1, id: 'toolu_02', type: 'function', function: { name: 'get_time', arguments: '' } }] }),
    c({}, 'tool_calls'),
    '[DONE]',
  ]);
});

t.test('failure mode 1: a tool input that arrives whole in content_block_start is not lost', async (t) => {
  const out = shape(
    run(hook(), [
      messageStart(),
      blockStart(0, { type: 'tool_use', id: 'toolu_1', name: 'f', input: { a: 1 } }),
      blockStop(0),
      messageDelta('tool_use'),
      messageStop(),
    ]),
  );
  t.strictSame(out[1], c({ tool_calls: [{ index: 0, id: 'toolu_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] }));
});

t.test('failure mode 7: stop reasons map; a turn with tool calls is always tool_calls', async (t) => {
  for (const [stop, finish] of STOP_TO_FINISH) {
    const out = shape(run(hook(), [messageStart(), messageDelta(stop), messageStop()]));
    t.equal((out.at(-2) as any).choices[0].finish_reason, finish, `${stop} → ${finish}`);
  }
  const withTool = shape(
    run(hook(), [
      messageStart(),
      blockStart(0, { type: 'tool_use', id: 'toolu_1', name: 'f', input: {} }),
      blockStop(0),
      messageDelta('end_turn'),
      messageStop(),
    ]),
  );
  t.equal((withTool.at(-2) as any).choices[0].finish_reason, 'tool_calls', 'tool turn reported as end_turn → tool_calls');
});

t.test('failure mode 10: a stream cut short still ends with finish_reason and [DONE]', async (t) => {
  const out = shape(run(hook(true), [messageStart(), blockStart(0, { type: 'text', text: '' }), blockDelta(0, { type: 'text_delta', text: 'Hi' })]));
  t.strictSame(out.slice(-3, -2), [c({}, 'stop')]);
  t.equal((out.at(-2) as any).choices.length, 0, 'usage chunk');
  t.equal(out.at(-1), '[DONE]');
  const again = hook();
  const all = run(again, textStream());
  t.equal(all.filter((e) => e.isDone).length, 1, 'exactly one [DONE]');
  t.same(again.onEnd(), undefined, 'nothing more after message_stop');
});

t.test('redacted thinking arrives whole and is handed out whole; unknown events are dropped', async (t) => {
  const out = shape(
    run(hook(), [
      messageStart(),
      blockStart(0, { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4a' }),
      blockStop(0),
      blockStart(1, { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} }),
      blockDelta(1, { type: 'input_json_delta', partial_json: '{"q":1}' }),
      blockStop(1),
      upMsgUnknown(),
      messageDelta('end_turn'),
      messageStop(),
    ]),
  );
  t.strictSame(out, [
    c({ role: 'assistant', content: '' }),
    c({ reasoning_details: [{ type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4a' }] }),
    c({}, 'stop'),
    '[DONE]',
  ]);
});

function upMsgUnknown() {
  return blockDelta(0, { type: 'brand_new_delta', x: 1 });
}

t.test('the OpenAI SDK accumulates the converted stream (ChatCompletionStream.finalChatCompletion)', async (t) => {
  const out = run(hook(true), toolStream());
  const client = openaiServing(sseText(out));
  const stream = client.chat.completions.stream({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream_options: { include_usage: true } });
  const final = await stream.finalChatCompletion();
  const msg: any = final.choices[0].message;
  t.equal(final.model, MODEL);
  t.equal(final.choices[0].finish_reason, 'tool_calls');
  t.equal(msg.content, 'Checking.');
  t.strictSame(
    msg.tool_calls.map((x: any) => [x.id, x.function.name, x.function.arguments]),
    [
      ['toolu_01T1x1fJ34qAmk2tNTrN7Up6', 'get_weather', '{"location": "San Francisco"}'],
      ['toolu_02', 'get_time', ''],
    ],
  );
  t.strictSame(msg.reasoning_details, [{ type: 'thinking', thinking: 'Let me check.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3h' }]);
  t.equal(final.usage?.completion_tokens, 89);
});

t.test('failure mode 12: an error after output reaches a chat client as a data error chunk, and the SDK throws', async (t) => {
  const partial = run(hook(), textStream().slice(0, 4), false);
  const err = new GatewayError(503, 'overloaded_error', 'upstream_overloaded', 'Overloaded');
  const text = sseText(partial) + errorEvent(err, 'chat');
  t.match(errorEvent(err, 'chat'), /^data: \{"error":\{/);
  const stream = openaiServing(text).chat.completions.stream({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] });
  await t.rejects(stream.finalChatCompletion(), /Overloaded/);
});

t.test('property: any split of input_json_delta after any leading blocks gives the exact arguments at tool indexes 0..n-1', async (t) => {
  const call = fc.record({
    input: fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), fc.oneof(fc.string(), fc.integer(), fc.boolean()), { maxKeys: 4 }),
    cuts: fc.array(fc.nat(), { maxLength: 5 }),
  });
  await fc.assert(
    fc.asyncProperty(fc.array(call, { minLength: 1, maxLength: 4 }), fc.nat({ max: 2 }), async (calls, leading) => {
      const events = [messageStart()];
      let index = 0;
      if (leading >= 1) events.push(blockStart(index, { type: 'thinking', thinking: '' }), blockDelta(index, { type: 'thinking_delta', thinking: 'hm' }), blockDelta(index, { type: 'signature_delta', signature: 's' }), blockStop(index++));
      if (leading >= 2) events.push(blockStart(index, { type: 'text', text: '' }), blockDelta(index, { type: 'text_delta', text: 'ok' }), blockStop(index++));
      calls.forEach((c, k) => {
        const json = JSON.stringify(c.input);
        const points = [...new Set(c.cuts.map((n) => n % (json.length + 1)))].sort((a, b) => a - b);
        events.push(blockStart(index, { type: 'tool_use', id: `toolu_${k}`, name: `f${k}`, input: {} }), blockDelta(index, { type: 'input_json_delta', partial_json: '' }));
        let from = 0;
        for (const to of [...points, json.length]) {
          events.push(blockDelta(index, { type: 'input_json_delta', partial_json: json.slice(from, to) }));
          from = to;
        }
        events.push(blockStop(index++));
      });
      events.push(messageDelta('tool_use'), messageStop());
      const out = run(hook(), events);
      const final = await openaiServing(sseText(out)).chat.completions.stream({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }).finalChatCompletion();
      const got = JSON.stringify(final.choices[0].message.tool_calls?.map((c: any) => [c.id, c.function.name, c.function.arguments === '' ? {} : JSON.parse(c.function.arguments)]));
      const want = JSON.stringify(calls.map((c, k) => [`toolu_${k}`, `f${k}`, c.input]));
      if (got !== want) throw new Error(`tool calls ${got}, expected ${want}`);
    }),
    { numRuns: 100 },
  );
  t.pass('100 random streams accumulated exactly');
});
