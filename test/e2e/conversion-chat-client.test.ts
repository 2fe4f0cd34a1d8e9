// A chat-completions client (the official OpenAI SDK) served by a messages-format upstream (the
// simulator, which checks requests as strictly as the vendor), and chat → chat passthrough.
import t from 'tap';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { CONTINUE_TEXT } from '../../plugins/format-transform/chat-to-messages.js';

let gw: TestGateway;
t.before(async () => {
  gw = await startGateway();
});
t.teardown(() => gw.close());

const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.apiKey, maxRetries: 0 });
/** test/claude's cheapest offer speaks the messages format; test/gpt's speaks chat. */
const CONVERTED = 'test/claude';
const upstreamBody = () => gw.sim.received.at(-1)!.body;

const tools: OpenAI.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
];

t.test('non-stream text: the request arrives in the messages format, the answer in the chat format', async (t) => {
  const { data, response } = await openai()
    .chat.completions.create({
      model: CONVERTED,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello <<sim words=5>>' },
      ],
      max_tokens: 100,
      temperature: 1.5,
      stop: ['\n\n', 'END'],
      user: 'user-7',
    })
    .withResponse();
  t.equal(response.headers.get('x-service-listing'), 'test/claude@sim-messages');
  t.equal(data.object, 'chat.completion');
  t.equal(data.model, CONVERTED);
  t.match(data.id, /^chatcmpl-/);
  t.equal(data.choices[0].message.content?.split(' ').length, 5);
  t.equal(data.choices[0].finish_reason, 'stop');
  t.equal(data.usage?.completion_tokens, 5);
  t.strictSame(upstreamBody(), {
    model: 'claude-up',
    max_tokens: 100,
    system: [{ type: 'text', text: 'Be brief.' }],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello <<sim words=5>>' }] }],
    stop_sequences: ['END'],
    temperature: 1,
    metadata: { user_id: 'user-7' },
  });
});

t.test("without max_tokens the upstream gets the model's maximum output", async (t) => {
  await openai().chat.completions.create({ model: CONVERTED, messages: [{ role: 'user', content: 'Hi <<sim words=2>>' }] });
  t.equal(upstreamBody().max_tokens, 8192);
});

t.test('failure modes 9 and 7: cache tokens in usage; refusal and context-window stops', async (t) => {
  const cached = await openai().chat.completions.create({
    model: CONVERTED,
    max_tokens: 50,
    messages: [{ role: 'user', content: 'Hi <<sim words=3 cache_read=1000 cache_write=200>>' }],
  });
  const input = Math.ceil('Hi <<sim words=3 cache_read=1000 cache_write=200>>'.length / 4);
  t.equal(cached.usage?.prompt_tokens, input + 1200);
  t.equal(cached.usage?.prompt_tokens_details?.cached_tokens, 1000);
  for (const [stop, finish] of [
    ['refusal', 'content_filter'],
    ['model_context_window_exceeded', 'length'],
    ['pause_turn', 'stop'],
  ]) {
    const r = await openai().chat.completions.create({ model: CONVERTED, max_tokens: 50, messages: [{ role: 'user', content: `x <<sim stop=${stop}>>` }] });
    t.equal(r.choices[0].finish_reason, finish, `${stop} → ${finish}`);
  }
});

t.test('stream with thinking and two tool calls, then the tool turn sends both back (failure modes 1, 2, 3, 6, 8)', async (t) => {
  const client = openai();
  const question: OpenAI.ChatCompletionMessageParam = { role: 'user', content: 'Weather and time? <<sim tools=2 thinking=1 words=3>>' };
  const first = await client.chat.completions
    .stream({ model: CONVERTED, messages: [question], tools, reasoning_effort: 'medium', max_tokens: 4000, stream_options: { include_usage: true } })
    .finalChatCompletion();
  t.equal(upstreamBody().thinking.type, 'enabled', 'reasoning_effort asked the upstream for thinking');
  t.equal(upstreamBody().max_tokens, 4000);
  const msg: any = first.choices[0].message;
  t.equal(first.model, CONVERTED);
  t.equal(first.choices[0].finish_reason, 'tool_calls');
  t.equal(msg.content?.split(' ').length, 3);
  t.equal(msg.tool_calls.length, 2);
  t.strictSame(msg.tool_calls.map((c: any) => [c.function.name, c.function.arguments]), [
    ['get_weather', '{"city":"value-city"}'],
    ['get_time', ''], // failure mode 4: a call without arguments streams ""
  ]);
  t.equal(msg.reasoning_details.length, 1);
  t.match(msg.reasoning_details[0], { type: 'thinking', thinking: /\w/, signature: /.+/ });
  t.ok(first.usage && first.usage.completion_tokens > 0, 'usage arrived');

  const second = await client.chat.completions
    .stream({
      model: CONVERTED,
      tools,
      reasoning_effort: 'medium',
      max_tokens: 4000,
      messages: [
        question,
        msg,
        { role: 'tool', tool_call_id: msg.tool_calls[0].id, content: 'Sunny' },
        { role: 'tool', tool_call_id: msg.tool_calls[1].id, content: 'Noon' },
      ],
    })
    .finalChatCompletion();
  t.equal(second.choices[0].finish_reason, 'stop', 'the request was accepted and answered in text (the directive was for the first turn)');
  const sent = upstreamBody().messages;
  t.strictSame(sent[1].content[0], { type: 'thinking', thinking: msg.reasoning_details[0].thinking, signature: msg.reasoning_details[0].signature }, 'signature unchanged');
  t.strictSame(
    sent[2].content.map((b: any) => [b.type, b.tool_use_id]),
    msg.tool_calls.map((c: any) => ['tool_result', c.id]),
  );
});

t.test('non-stream tool turn round trip (failure modes 4 and 6)', async (t) => {
  const client = openai();
  const question: OpenAI.ChatCompletionMessageParam = { role: 'user', content: 'Time? <<sim tools=1 thinking=1 words=0>>' };
  const first = await client.chat.completions.create({ model: CONVERTED, messages: [question], tools: [tools[1]], reasoning_effort: 'low', max_tokens: 3000 });
  const msg: any = first.choices[0].message;
  t.equal(msg.content, null);
  t.equal(msg.tool_calls[0].function.arguments, '{}', 'no arguments: "{}" outside streams');
  const second = await client.chat.completions.create({
    model: CONVERTED,
    tools: [tools[1]],
    reasoning_effort: 'low',
    max_tokens: 3000,
    messages: [question, msg, { role: 'tool', tool_call_id: msg.tool_calls[0].id, content: 'Noon' }],
  });
  t.equal(second.choices[0].finish_reason, 'stop', 'accepted and answered in text');
});

t.test('failure modes 14, 16, 17: odd ids, results out of place, no tools, assistant first — the strict upstream accepts', async (t) => {
  const r = await openai().chat.completions.create({
    model: CONVERTED,
    max_tokens: 50,
    messages: [
      { role: 'assistant', content: 'Welcome back.' },
      { role: 'user', content: 'Check the time.' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'functions.get_time:0', type: 'function', function: { name: 'get_time', arguments: '' } }] },
      { role: 'user', content: 'Quickly <<sim words=2>>' },
      { role: 'tool', tool_call_id: 'functions.get_time:0', content: 'Noon' },
    ],
  });
  t.equal(r.choices[0].message.content?.split(' ').length, 2);
  const sent = upstreamBody();
  t.strictSame(sent.messages[0], { role: 'user', content: [{ type: 'text', text: CONTINUE_TEXT }] });
  t.strictSame(sent.messages[4].content[0], { type: 'tool_result', tool_use_id: 'functions_get_time_0', content: 'Noon' });
  t.strictSame(sent.tool_choice, { type: 'none' });
});

t.test('images: a data URL becomes base64, an http URL stays a URL; other media types are a 400 (failure mode 13)', async (t) => {
  await openai().chat.completions.create({
    model: CONVERTED,
    max_tokens: 20,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Describe <<sim words=2>>' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.webp' } },
        ],
      },
    ],
  });
  t.strictSame(upstreamBody().messages[0].content.slice(1), [
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
    { type: 'image', source: { type: 'url', url: 'https://example.com/cat.webp' } },
  ]);
  const refused = await openai()
    .chat.completions.create({
      model: CONVERTED,
      max_tokens: 20,
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/tiff;base64,SUkq' } }] }],
    })
    .catch((err: unknown) => err);
  t.ok(refused instanceof OpenAI.APIError && refused.status === 400, 'a 400 in the chat format');
  t.match((refused as InstanceType<typeof OpenAI.APIError>).error, { param: 'messages[0].content[0].image_url.url' });
});

t.test('response_format json_schema reaches the upstream as output_config.format', async (t) => {
  const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'], additionalProperties: false };
  await openai().chat.completions.create({
    model: CONVERTED,
    max_tokens: 20,
    messages: [{ role: 'user', content: 'JSON please <<sim words=2>>' }],
    response_format: { type: 'json_schema', json_schema: { name: 'r', schema, strict: true } },
  });
  t.strictSame(upstreamBody().output_config, { format: { type: 'json_schema', schema } });
});

t.test('failure mode 8: the usage chunk reaches only a client that asked; the upstream is always asked', async (t) => {
  for (const model of [CONVERTED, 'test/gpt']) {
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const c of await openai().chat.completions.create({ model, stream: true, messages: [{ role: 'user', content: 'Hi <<sim words=4>>' }] })) chunks.push(c);
    t.notOk(chunks.some((c) => c.usage), `${model}: no usage chunk unasked`);
    t.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('').split(' ').length, 4);
    if (model === 'test/gpt') t.strictSame(upstreamBody().stream_options, { include_usage: true }, 'passthrough asks the chat upstream for usage');
    const asked: OpenAI.ChatCompletionChunk[] = [];
    const stream = await openai().chat.completions.create({ model, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Hi <<sim words=4>>' }] });
    for await (const c of stream) asked.push(c);
    t.equal(asked.at(-1)?.usage?.completion_tokens, 4, `${model}: usage chunk last`);
    t.ok(asked.every((c) => c.model === model), `${model}: every chunk names the client's model`);
  }
});

t.test('chat passthrough: known fields reach the upstream, unknown ones do not (they could be billable), the answer names the client model', async (t) => {
  const r = await openai().chat.completions.create({
    model: 'test/gpt',
    max_tokens: 20,
    messages: [{ role: 'user', content: 'Hi <<sim words=2>>' }],
    seed: 7,
    // @ts-expect-error a field the SDK does not know
    vendor_extension: { keep: true },
  });
  t.equal(r.model, 'test/gpt');
  t.match(upstreamBody(), { model: 'gpt-up', seed: 7 });
  t.notOk('vendor_extension' in upstreamBody(), 'dropped: offer-pick forwards only fields it knows or the offer declares');
});

t.test('failure mode 12: an upstream error after output reaches the chat client as an error, the stream ends', async (t) => {
  const stream = openai().chat.completions.stream({
    model: CONVERTED,
    max_tokens: 100,
    messages: [{ role: 'user', content: 'Hi <<sim words=20 fault=error_after_200 after=4>>' }],
  });
  await t.rejects(stream.finalChatCompletion());
});
