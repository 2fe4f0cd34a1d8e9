// The chat-completions side of the simulator, driven by the official OpenAI SDK.
import t from 'tap';
import OpenAI from 'openai';
import { simulatedInputTokens, startSimulator } from '../../../lib/simulator/index.js';
import { errorWith } from '../../helpers/error-pattern.js';
import { pdfBase64 } from '../../helpers/pdf.js';

const KEY = 'sk-upstream-test';
const sim = await startSimulator({ apiKey: KEY });
t.teardown(() => sim.close());
const client = new OpenAI({ baseURL: sim.url + '/v1', apiKey: KEY, maxRetries: 0 });

const tools: OpenAI.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' }, metric: { type: 'boolean' } } },
    },
  },
  { type: 'function', function: { name: 'now', parameters: { type: 'object', properties: {} } } },
];

t.test('non-stream answer: words, usage, ids, recorded request', async (t) => {
  sim.clear();
  const body = { model: 'any-model', messages: [{ role: 'system' as const, content: 'Be brief.' }, { role: 'user' as const, content: 'Hello there' }] };
  const res = await client.chat.completions.create(body);
  t.equal(res.object, 'chat.completion');
  t.equal(res.model, 'any-model');
  t.match(res.id, /^chatcmpl-/);
  const text = res.choices[0].message.content ?? '';
  t.equal(text.split(' ').length, 12, 'twelve words by default');
  t.equal(res.choices[0].finish_reason, 'stop');
  const input = simulatedInputTokens(body, 'chat');
  t.equal(input, Math.ceil(('Be brief.' + 'Hello there').length / 4));
  t.same(res.usage, {
    prompt_tokens: input,
    completion_tokens: 12,
    total_tokens: input + 12,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  });
  t.equal(sim.received.length, 1);
  t.same(sim.received[0].body, body);
  t.equal(sim.received[0].path, '/v1/chat/completions');
  t.equal(sim.received[0].headers.authorization, `Bearer ${KEY}`);

  const again = await client.chat.completions.create(body);
  t.equal(again.choices[0].message.content, text, 'the same prompt gives the same words');
  const other = await client.chat.completions.create({ ...body, messages: [{ role: 'user', content: 'Something else entirely' }] });
  t.not(other.choices[0].message.content, text, 'another prompt gives other words');
});

t.test('stream: role chunk, one chunk per word, finish chunk, usage chunk only when asked', async (t) => {
  const messages = [{ role: 'user' as const, content: 'Stream please <<sim words=5>>' }];
  const chunks: OpenAI.ChatCompletionChunk[] = [];
  for await (const c of await client.chat.completions.create({ model: 'm', messages, stream: true, stream_options: { include_usage: true } })) {
    chunks.push(c);
  }
  t.same(chunks[0].choices[0].delta, { role: 'assistant', content: '', refusal: null });
  const words = chunks.slice(1, 6).map((c) => c.choices[0].delta.content);
  t.equal(words.length, 5);
  t.ok(words.slice(1).every((w) => w?.startsWith(' ')), 'later words carry their leading space');
  t.equal(chunks[6].choices[0].finish_reason, 'stop');
  t.same(chunks[6].choices[0].delta, {});
  t.same(chunks[7].choices, []);
  const input = simulatedInputTokens({ messages }, 'chat');
  t.match(chunks[7].usage, { prompt_tokens: input, completion_tokens: 5, total_tokens: input + 5 });
  t.ok(chunks.slice(0, 7).every((c) => c.usage === null), 'other chunks carry usage: null');
  t.equal(chunks.length, 8);
  t.ok(chunks.every((c) => c.id === chunks[0].id && c.object === 'chat.completion.chunk'));

  const plain: OpenAI.ChatCompletionChunk[] = [];
  for await (const c of await client.chat.completions.create({ model: 'm', messages, stream: true })) plain.push(c);
  t.equal(plain.length, 7, 'no usage chunk without include_usage');
  t.ok(plain.every((c) => !('usage' in c)), 'and no usage field');
  t.equal(plain.map((c) => c.choices[0].delta.content ?? '').join(''), words.join(''));
});

t.test('chunks=N splits the text into N deltas; max_completion_tokens cuts it with finish_reason length', async (t) => {
  const stream = await client.chat.completions.create({
    model: 'm',
    messages: [{ role: 'user', content: '<<sim words=10 chunks=3>>' }],
    stream: true,
  });
  const contents: string[] = [];
  for await (const c of stream) if (c.choices[0]?.delta.content) contents.push(c.choices[0].delta.content);
  t.equal(contents.length, 3);
  t.equal(contents.join('').split(' ').length, 10);

  const cut = await client.chat.completions.create({
    model: 'm',
    messages: [{ role: 'user', content: 'long answer' }],
    max_tokens: 50,
    max_completion_tokens: 4,
  });
  t.equal(cut.choices[0].message.content?.split(' ').length, 4, 'max_completion_tokens wins over max_tokens');
  t.equal(cut.choices[0].finish_reason, 'length');
  t.equal(cut.usage?.completion_tokens, 4);
});

t.test('parallel tool calls, non-stream: schema-shaped arguments, "{}" for no properties', async (t) => {
  const res = await client.chat.completions.create({
    model: 'm',
    messages: [{ role: 'user', content: 'Use tools <<sim tools=3 words=0>>' }],
    tools,
  });
  const choice = res.choices[0];
  t.equal(choice.finish_reason, 'tool_calls');
  t.equal(choice.message.content, null);
  const calls = (choice.message.tool_calls ?? []).map((c) => (c.type === 'function' ? [c.id, c.function.name, c.function.arguments] : []));
  t.equal(calls.length, 3);
  t.same(
    calls.map((c) => c.slice(1)),
    [
      ['get_weather', '{"city":"value-city","days":42,"metric":true}'],
      ['now', '{}'],
      ['get_weather', '{"city":"value-city","days":42,"metric":true}'],
    ],
  );
  t.ok(calls.every((c) => /^call_/.test(c[0])));
  t.equal(new Set(calls.map((c) => c[0])).size, 3, 'distinct ids');
  const toolTokens = Math.ceil(('get_weather' + calls[0][2]).length / 4) * 2 + Math.ceil('now{}'.length / 4);
  t.equal(res.usage?.completion_tokens, toolTokens);
});

t.test('parallel tool calls, stream: first fragment names the call and carries arguments, "" for none', async (t) => {
  const stream = await client.chat.completions.create({
    model: 'm',
    messages: [{ role: 'user', content: 'Use tools <<sim tools=2 words=2>>' }],
    tools,
    stream: true,
  });
  const fragments: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
  let text = '';
  let finish: string | null = null;
  for await (const c of stream) {
    fragments.push(...(c.choices[0].delta.tool_calls ?? []));
    text += c.choices[0].delta.content ?? '';
    finish = c.choices[0].finish_reason ?? finish;
  }
  t.equal(text.split(' ').length, 2, 'text precedes the calls');
  t.equal(finish, 'tool_calls');
  const first = fragments.filter((f) => f.id !== undefined);
  t.same(
    first.map((f) => [f.index, f.type, f.function?.name]),
    [
      [0, 'function', 'get_weather'],
      [1, 'function', 'now'],
    ],
  );
  t.ok((first[0].function?.arguments ?? '').length > 0, 'the first fragment carries the first arguments');
  t.equal(first[1].function?.arguments, '', 'no properties: empty arguments in a stream');
  const later = fragments.filter((f) => f.id === undefined);
  t.ok(later.length >= 2, 'arguments split in several pieces');
  t.ok(later.every((f) => f.type === undefined && f.function?.name === undefined), 'later fragments: index and arguments only');
  const args0 = fragments.filter((f) => f.index === 0).map((f) => f.function?.arguments).join('');
  t.same(JSON.parse(args0), { city: 'value-city', days: 42, metric: true });

  const interleaved = await client.chat.completions.create({
    model: 'm',
    messages: [{ role: 'user', content: '<<sim tools=2 words=0 interleave=1>>' }],
    tools: [tools[0], tools[0]],
    stream: true,
  });
  const order: number[] = [];
  for await (const c of interleaved) for (const f of c.choices[0].delta.tool_calls ?? []) order.push(f.index);
  t.same(order, [0, 1, 0, 1, 0, 1], 'interleave=1 alternates the calls');
});

t.test('thinking: reasoning_content, reasoning_details with a signature that round-trips', async (t) => {
  const res = await client.chat.completions.create({
    model: 'm',
    messages: [{ role: 'user', content: 'Think first <<sim words=3>>' }],
    reasoning_effort: 'low',
  });
  const message = res.choices[0].message as OpenAI.ChatCompletionMessage & {
    reasoning_content: string;
    reasoning_details: { type: string; thinking: string; signature: string }[];
  };
  t.equal(message.reasoning_content.split(' ').length, 8);
  t.same(message.reasoning_details.map((d) => [d.type, d.thinking]), [['thinking', message.reasoning_content]]);
  t.match(message.reasoning_details[0].signature, /^[A-Za-z0-9+/=]{20,}$/);
  t.equal(res.usage?.completion_tokens, 11);
  t.equal(res.usage?.completion_tokens_details?.reasoning_tokens, 8);

  const none = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'none' });
  t.notOk('reasoning_content' in none.choices[0].message, 'reasoning_effort none: no thinking');

  const directed = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: '<<sim thinking=1>>' }] });
  t.ok('reasoning_content' in directed.choices[0].message, 'thinking=1 asks for thinking too');

  const stream = await client.chat.completions.create({
    model: 'm',
    messages: [{ role: 'user', content: 'Think first <<sim words=3>>' }],
    reasoning_effort: 'low',
    stream: true,
  });
  let reasoning = '';
  let details: unknown;
  for await (const c of stream) {
    const delta = c.choices[0].delta as { reasoning_content?: string; reasoning_details?: unknown };
    reasoning += delta.reasoning_content ?? '';
    details = delta.reasoning_details ?? details;
  }
  t.equal(reasoning, message.reasoning_content, 'the same thinking in a stream');
  t.same(details, message.reasoning_details, 'the signature arrives in a reasoning_details delta');

  const history = [
    { role: 'user', content: 'Think first <<sim words=3>>' },
    { role: 'assistant', content: res.choices[0].message.content, reasoning_details: message.reasoning_details },
    { role: 'user', content: 'go on' },
  ];
  const ok = await client.chat.completions.create({ model: 'm', messages: history as OpenAI.ChatCompletionMessageParam[] });
  t.equal(ok.choices[0].finish_reason, 'stop', 'an unchanged signature is accepted');
  const altered = structuredClone(history) as any[];
  altered[1].reasoning_details[0].signature = 'forged';
  await t.rejects(client.chat.completions.create({ model: 'm', messages: altered }), errorWith({ status: 400 }), 'an altered signature is refused');
});

t.test('cache_read: prompt_tokens includes the cached tokens', async (t) => {
  const messages = [{ role: 'user' as const, content: 'cached prefix <<sim cache_read=100 words=1>>' }];
  const res = await client.chat.completions.create({ model: 'm', messages });
  const input = simulatedInputTokens({ messages }, 'chat');
  t.equal(res.usage?.prompt_tokens, input + 100);
  t.equal(res.usage?.prompt_tokens_details?.cached_tokens, 100);
});

t.test('stop directive maps to the chat finish reasons', async (t) => {
  const expected: Record<string, string> = {
    end_turn: 'stop',
    stop_sequence: 'stop',
    pause_turn: 'stop',
    max_tokens: 'length',
    model_context_window_exceeded: 'length',
    refusal: 'content_filter',
  };
  for (const [stop, finish] of Object.entries(expected)) {
    const res = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: `<<sim stop=${stop}>>` }] });
    t.equal(res.choices[0].finish_reason, finish, stop);
  }
});

t.test('models list, chat shape', async (t) => {
  const page = await client.models.list();
  t.ok(page.data.length > 0);
  for (const m of page.data) t.match(m, { id: String, object: 'model', created: Number, owned_by: String });
  const raw = await fetch(sim.url + '/v1/models', { headers: { authorization: `Bearer ${KEY}` } });
  t.match(await raw.json(), { object: 'list', data: Array });
});

t.test('errors in the chat shape: auth, malformed JSON, missing fields, vendor rules', async (t) => {
  const bad = new OpenAI({ baseURL: sim.url + '/v1', apiKey: 'wrong', maxRetries: 0 });
  await t.rejects(bad.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }), errorWith({ status: 401 }));

  const post = async (body: string) => {
    const res = await fetch(sim.url + '/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body,
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const noKey = await fetch(sim.url + '/v1/chat/completions', { method: 'POST', headers: { 'x-api-key': KEY }, body: '{}' });
  t.equal(noKey.status, 401, 'chat routes want a bearer token');
  const unauthorized = (await noKey.json()) as any;
  t.notMatch(JSON.stringify(unauthorized), KEY, 'no secret echoed');

  const malformed = await post('{"model": ');
  t.equal(malformed.status, 400);
  t.match(malformed.body, { error: { message: String, type: 'invalid_request_error', param: null, code: String } });
  t.equal(sim.received.at(-1)?.body, '{"model": ', 'a body that is not JSON is recorded as text');

  t.match(await post('{"messages":[{"role":"user","content":"x"}]}'), { status: 400, body: { error: { param: 'model' } } });
  t.match(await post('{"model":"m"}'), { status: 400, body: { error: { param: 'messages' } } });
  t.match(await post('{"model":"m","messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}}'), {
    status: 400,
    body: { error: { param: 'stream_options' } },
  });
  const call = { id: 'call_1', type: 'function', function: { name: 'now', arguments: '' } };
  const unanswered = await post(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'user', content: 'y' }] }));
  t.equal(unanswered.status, 400, 'tool_calls must be followed by their tool messages');
  t.match(unanswered.body.error.message, /call_1/);
  const stray = await post(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }, { role: 'tool', tool_call_id: 'call_9', content: 'r' }] }));
  t.equal(stray.status, 400, 'a tool message must answer a preceding tool call');
  const answered = await post(
    JSON.stringify({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: 'call_1', content: 'r' }],
    }),
  );
  t.equal(answered.status, 200, 'a complete tool turn is accepted');
  t.equal((await post('{"model":"m","messages":[{"role":"user","content":"<<sim wrods=3>>"}]}')).status, 400, 'a mistyped directive is refused');
});

t.test('file parts as the vendor takes them: a file id, or data with a file name; user messages only', async (t) => {
  const post = async (messages: object[]) => {
    const res = await fetch(sim.url + '/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages }),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const pdf = `data:application/pdf;base64,${pdfBase64({ pages: 2 })}`;
  const ask = (file: object) => [{ role: 'user', content: [{ type: 'text', text: 'Summarize' }, { type: 'file', file }] }];
  const ok = await post(ask({ file_data: pdf, filename: 'a.pdf' }));
  t.equal(ok.status, 200, JSON.stringify(ok.body));
  const plain = await post([{ role: 'user', content: 'Summarize' }]);
  t.ok(ok.body.usage.prompt_tokens >= plain.body.usage.prompt_tokens + 2 * 2000, `a 2-page PDF reads as pages (${ok.body.usage.prompt_tokens} prompt tokens)`);
  t.equal((await post(ask({ file_id: 'file-abc' }))).status, 200, 'an uploaded file by id');

  const rules: [string, object[], string][] = [
    ['data without a file name', ask({ file_data: pdf }), 'messages[0].content[1].file.file_id'],
    ['neither data nor id', ask({ filename: 'a.pdf' }), 'messages[0].content[1].file.file_id'],
    ['data that is not a data URL', ask({ file_data: pdfBase64({ pages: 1 }), filename: 'a.pdf' }), 'messages[0].content[1].file.file_data'],
    ['a PDF that is not one', ask({ file_data: 'data:application/pdf;base64,aGVsbG8=', filename: 'a.pdf' }), 'messages[0].content[1].file.file_data'],
    ['a file in a system message', [{ role: 'system', content: [{ type: 'file', file: { file_id: 'f' } }] }, { role: 'user', content: 'x' }], 'messages[0].content[0].type'],
  ];
  for (const [name, messages, param] of rules) t.match(await post(messages), { status: 400, body: { error: { type: 'invalid_request_error', param } } }, name);
});
