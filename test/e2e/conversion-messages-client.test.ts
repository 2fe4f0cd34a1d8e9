// A messages-format client (the official Anthropic SDK) served by a chat-completions upstream (the
// simulator, strict as the vendor), messages → messages passthrough, and count_tokens.
import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
t.before(async () => {
  gw = await startGateway();
});
t.teardown(() => gw.close());

const anthropic = () => new Anthropic({ baseURL: gw.url, apiKey: gw.apiKey, maxRetries: 0 });
/** test/gpt's cheapest offer speaks chat; test/claude's speaks the messages format. */
const CONVERTED = 'test/gpt';
const upstreamBody = () => gw.sim.received.at(-1)!.body;

const tools: Anthropic.Tool[] = [
  { name: 'get_weather', description: 'Current weather', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
  { name: 'get_time', input_schema: { type: 'object', properties: {} } },
];

t.test('non-stream text: the request arrives in the chat format, the answer in the messages format', async (t) => {
  const { data, response } = await anthropic()
    .messages.create({
      model: CONVERTED,
      max_tokens: 100,
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'Hello <<sim words=5>>' }],
      stop_sequences: ['END'],
      metadata: { user_id: 'user-7' },
      // @ts-expect-error the SDK version at hand does not list temperature
      temperature: 0.2,
    })
    .withResponse();
  t.equal(response.headers.get('x-service-listing'), 'test/gpt@sim-chat');
  t.equal(data.type, 'message');
  t.equal(data.model, CONVERTED);
  t.match(data.id, /^msg_/);
  t.equal((data.content[0] as Anthropic.TextBlock).text.split(' ').length, 5);
  t.equal(data.stop_reason, 'end_turn');
  t.equal(data.usage.output_tokens, 5);
  t.strictSame(upstreamBody(), {
    model: 'gpt-up',
    messages: [
      { role: 'system', content: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }] },
      { role: 'user', content: 'Hello <<sim words=5>>' },
    ],
    max_completion_tokens: 100,
    stop: ['END'],
    temperature: 0.2,
    user: 'user-7',
  });
});

t.test('failure modes 7 and 9: stop reasons and cached tokens', async (t) => {
  const text = 'Hi <<sim words=3 cache_read=500>>';
  const r = await anthropic().messages.create({ model: CONVERTED, max_tokens: 50, messages: [{ role: 'user', content: text }] });
  t.equal(r.usage.cache_read_input_tokens, 500);
  t.equal(r.usage.input_tokens, Math.ceil(text.length / 4), 'cached tokens are not counted again as input');
  for (const [stop, expected] of [
    ['refusal', 'refusal'],
    ['max_tokens', 'max_tokens'],
    ['stop_sequence', 'end_turn'],
  ]) {
    const m = await anthropic().messages.create({ model: CONVERTED, max_tokens: 50, messages: [{ role: 'user', content: `x <<sim stop=${stop}>>` }] });
    t.equal(m.stop_reason, expected, `${stop} → ${expected}`);
  }
});

t.test('stream with thinking and two tool calls, then the tool turn sends them back (failure modes 1, 3, 6, 8, 11)', async (t) => {
  const client = anthropic();
  const question: Anthropic.MessageParam = { role: 'user', content: 'Weather and time? <<sim tools=2 thinking=1 words=3 cache_read=64>>' };
  const first = await client.messages
    .stream({ model: CONVERTED, max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2000 }, tools, messages: [question] })
    .finalMessage();
  t.equal(upstreamBody().reasoning_effort, 'medium', 'a thinking budget of half max_tokens became a medium effort');
  t.strictSame(upstreamBody().stream_options, { include_usage: true });
  t.equal(first.model, CONVERTED);
  t.equal(first.stop_reason, 'tool_use');
  t.strictSame(
    first.content.map((b) => b.type),
    ['thinking', 'text', 'tool_use', 'tool_use'],
  );
  const thinking = first.content[0] as Anthropic.ThinkingBlock;
  t.ok(thinking.signature.length > 0, 'the signature arrived');
  const calls = first.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
  t.strictSame(calls.map((c) => [c.name, c.input]), [
    ['get_weather', { city: 'value-city' }],
    ['get_time', {}],
  ]);
  t.equal(first.usage.cache_read_input_tokens, 64);
  t.ok(first.usage.output_tokens > 0, 'usage from the final chunk');

  const second = await client.messages
    .stream({
      model: CONVERTED,
      max_tokens: 4000,
      thinking: { type: 'enabled', budget_tokens: 2000 },
      tools,
      messages: [
        question,
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: calls[0].id, content: 'Sunny' },
            { type: 'tool_result', tool_use_id: calls[1].id, content: [{ type: 'text', text: 'Noon' }] },
          ],
        },
      ],
    })
    .finalMessage();
  t.equal(second.stop_reason, 'end_turn', 'the strict upstream accepted the tool turn and answered in text');
  const sent = upstreamBody().messages;
  t.strictSame(sent[1].reasoning_details, [{ type: 'thinking', thinking: thinking.thinking, signature: thinking.signature }], 'signature unchanged');
  t.strictSame(
    sent.slice(2).map((m: any) => [m.role, m.tool_call_id, m.content]),
    [
      ['tool', calls[0].id, 'Sunny'],
      ['tool', calls[1].id, 'Noon'],
    ],
  );
});

t.test('failure mode 3: interleaved tool-call fragments from the upstream make one block per call', async (t) => {
  const events: string[] = [];
  const stream = anthropic().messages.stream({
    model: CONVERTED,
    max_tokens: 1000,
    tools,
    messages: [{ role: 'user', content: 'Both <<sim tools=2 interleave=1 words=0>>' }],
  });
  stream.on('streamEvent', (e) => events.push(e.type === 'content_block_delta' ? `delta${e.index}` : e.type === 'content_block_start' ? `start${e.index}` : e.type === 'content_block_stop' ? `stop${e.index}` : e.type));
  const msg = await stream.finalMessage();
  t.strictSame(msg.content.map((b) => (b as Anthropic.ToolUseBlock).input), [{ city: 'value-city' }, {}]);
  const stop0 = events.indexOf('stop0');
  t.notOk(events.slice(stop0).includes('delta0'), 'no delta after its stop');
  t.equal(events.at(-1), 'message_stop');
});

t.test('non-stream tool turn round trip with thinking (failure mode 6)', async (t) => {
  const client = anthropic();
  const question: Anthropic.MessageParam = { role: 'user', content: 'Time? <<sim tools=1 thinking=1 words=0>>' };
  const first = await client.messages.create({ model: CONVERTED, max_tokens: 3000, thinking: { type: 'enabled', budget_tokens: 2500 }, tools: [tools[1]], messages: [question] });
  t.strictSame(first.content.map((b) => b.type), ['thinking', 'tool_use']);
  const call = first.content[1] as Anthropic.ToolUseBlock;
  const second = await client.messages.create({
    model: CONVERTED,
    max_tokens: 3000,
    thinking: { type: 'enabled', budget_tokens: 2500 },
    tools: [tools[1]],
    messages: [question, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Noon' }] }],
  });
  t.equal(second.stop_reason, 'end_turn', 'accepted and answered in text');
  t.equal(upstreamBody().reasoning_effort, 'high');
});

t.test('messages passthrough: signatures and cache_control survive, unknown fields are dropped; the model name is restored', async (t) => {
  const client = anthropic();
  const question: Anthropic.MessageParam = { role: 'user', content: [{ type: 'text', text: 'Time? <<sim tools=1 thinking=1 words=1>>', cache_control: { type: 'ephemeral', ttl: '1h' } }] };
  const first = await client.messages.stream({ model: 'test/claude', max_tokens: 3000, thinking: { type: 'enabled', budget_tokens: 2000 }, tools: [tools[1]], messages: [question] }).finalMessage();
  t.equal(first.model, 'test/claude');
  const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
  const body = {
    model: 'test/claude',
    max_tokens: 3000,
    thinking: { type: 'enabled' as const, budget_tokens: 2000 },
    tools: [tools[1]],
    messages: [question, { role: 'assistant' as const, content: first.content }, { role: 'user' as const, content: [{ type: 'tool_result' as const, tool_use_id: call.id, content: 'Noon' }] }],
    future_field: { kept: true },
  };
  const second = await client.messages.create(body);
  t.equal(second.model, 'test/claude');
  // An unknown field could be billable upstream: offer-pick forwards only known or declared ones.
  const { model: _m, future_field: _f, ...expected } = body;
  t.strictSame({ ...upstreamBody(), model: undefined }, { ...JSON.parse(JSON.stringify(expected)), model: undefined }, 'the upstream got the body as sent, less the unknown field');
  t.equal(upstreamBody().model, 'claude-up');
});

t.test('failure mode 12: an upstream error after output reaches the messages client as event: error', async (t) => {
  const stream = anthropic().messages.stream({
    model: CONVERTED,
    max_tokens: 100,
    messages: [{ role: 'user', content: 'Hi <<sim words=20 fault=error_after_200 after=4>>' }],
  });
  await t.rejects(stream.finalMessage());
});

const countBody = {
  messages: [{ role: 'user' as const, content: 'How is the weather in Paris today?' }],
};

t.test('failure mode 18: count_tokens on a messages offer is passed through, system and tools included', async (t) => {
  const client = anthropic();
  const bare = await client.messages.countTokens({ model: 'test/claude', ...countBody });
  t.equal(gw.sim.received.at(-1)!.path, '/v1/messages/count_tokens');
  const full = await client.messages.countTokens({ model: 'test/claude', ...countBody, system: 'You are a meteorologist.', tools });
  t.ok(full.input_tokens > bare.input_tokens, `${full.input_tokens} > ${bare.input_tokens}`);
  t.strictSame(Object.keys(full), ['input_tokens']);
});

t.test(
  'failure mode 18: count_tokens on a chat offer is counted locally, system and tools included',
  async (t) => {
    const client = anthropic();
    const before = gw.sim.received.length;
    const bare = await client.messages.countTokens({ model: CONVERTED, ...countBody });
    const full = await client.messages.countTokens({ model: CONVERTED, ...countBody, system: 'You are a meteorologist.', tools });
    t.equal(gw.sim.received.length, before, 'no upstream call');
    t.ok(full.input_tokens > bare.input_tokens, `${full.input_tokens} > ${bare.input_tokens}`);
  },
);
