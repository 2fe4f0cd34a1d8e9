// The messages side of the simulator, driven by the official Anthropic SDK and by raw SSE reads.
import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { SseParser, type SseEvent } from '../../../lib/sse.js';
import { simulatedInputTokens, startSimulator } from '../../../lib/simulator/index.js';
import { errorWith } from '../../helpers/error-pattern.js';
import { pdfBase64 } from '../../helpers/pdf.js';

const KEY = 'sk-upstream-messages';
const sim = await startSimulator({ apiKey: KEY });
t.teardown(() => sim.close());
const client = new Anthropic({ baseURL: sim.url, apiKey: KEY, maxRetries: 0 });

const weather: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Weather for a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'number' }, metric: { type: 'boolean' } } },
};
const now: Anthropic.Tool = { name: 'now', input_schema: { type: 'object' } };

/** POSTs a messages request and returns its SSE events. */
async function rawStream(body: object): Promise<SseEvent[]> {
  const res = await fetch(sim.url + '/v1/messages', {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  const parser = new SseParser();
  const events: SseEvent[] = [];
  for await (const chunk of res.body!) events.push(...parser.push(chunk));
  return events;
}

t.test('non-stream message: words, usage, ids, recorded request', async (t) => {
  sim.clear();
  const body = { model: 'claude-any', max_tokens: 100, system: 'Be brief.', messages: [{ role: 'user' as const, content: 'Hello there' }] };
  const msg = await client.messages.create(body);
  t.match(msg, { type: 'message', role: 'assistant', model: 'claude-any', stop_reason: 'end_turn', stop_sequence: null });
  t.match(msg.id, /^msg_/);
  t.equal(msg.content.length, 1);
  const block = msg.content[0];
  t.equal(block.type === 'text' && block.text.split(' ').length, 12);
  const input = simulatedInputTokens(body, 'messages');
  t.equal(input, Math.ceil('Be brief.Hello there'.length / 4));
  t.same(msg.usage, { input_tokens: input, cache_creation_input_tokens: 0, cache_read_input_tokens: 0,
    cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 }, output_tokens: 12 });
  t.equal(sim.received.length, 1);
  t.same(sim.received[0].body, body);
  t.ok(sim.received[0].headers['anthropic-version'], 'the SDK sent its version header');
});

t.test('stream: event order, ping, cumulative usage; the SDK assembles the same message', async (t) => {
  const body = { model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'Stream <<sim words=4>>' }] };
  const events = await rawStream(body);
  t.same(
    events.map((e) => e.event),
    ['message_start', 'content_block_start', 'ping', ...Array(4).fill('content_block_delta'), 'content_block_stop', 'message_delta', 'message_stop'],
  );
  t.ok(events.every((e) => JSON.parse(e.data).type === e.event), 'each data carries its own type');
  const input = simulatedInputTokens(body, 'messages');
  t.match(JSON.parse(events[0].data).message, { content: [], stop_reason: null, usage: { input_tokens: input, output_tokens: 1 } });
  t.same(JSON.parse(events.at(-2)!.data), {
    type: 'message_delta',
    delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: { input_tokens: input, cache_creation_input_tokens: 0, cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 }, output_tokens: 4 },
  });

  const final = await client.messages.stream(body as Anthropic.MessageCreateParams).finalMessage();
  const nonStream = await client.messages.create(body as Anthropic.MessageCreateParamsNonStreaming);
  t.same(final.content, nonStream.content);
  t.equal(final.usage.output_tokens, 4);
});

t.test('bytes=N streams ~1 KB text deltas whose sum is about N bytes', async (t) => {
  const events = await rawStream({ model: 'm', max_tokens: 1_000_000, messages: [{ role: 'user', content: '<<sim bytes=200000>>' }] });
  const texts = events.filter((e) => e.event === 'content_block_delta').map((e) => JSON.parse(e.data).delta.text as string);
  const total = texts.reduce((n, s) => n + s.length, 0);
  t.ok(total >= 200_000 && total < 200_000 + 64, `about 200000 bytes (${total})`);
  t.ok(texts.slice(0, -1).every((s) => s.length >= 1024 && s.length < 1100), 'deltas of about 1 KB');
  const words = texts.join('').split(' ').length;
  t.equal(JSON.parse(events.at(-2)!.data).usage.output_tokens, words, 'one output token per word');
});

t.test('parallel tool calls: tool_use blocks after text, input_json_delta pieces', async (t) => {
  const body = { model: 'm', max_tokens: 200, tools: [weather, now], messages: [{ role: 'user', content: 'Use tools <<sim tools=3 words=2>>' }] };
  const msg = await client.messages.create(body as Anthropic.MessageCreateParamsNonStreaming);
  t.equal(msg.stop_reason, 'tool_use');
  t.same(
    msg.content.map((b) => b.type),
    ['text', 'tool_use', 'tool_use', 'tool_use'],
  );
  const uses = msg.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
  t.same(
    uses.map((u) => [u.name, u.input]),
    [
      ['get_weather', { city: 'value-city', days: 42, metric: true }],
      ['now', {}],
      ['get_weather', { city: 'value-city', days: 42, metric: true }],
    ],
  );
  t.ok(uses.every((u) => /^toolu_[a-zA-Z0-9_-]+$/.test(u.id)));

  const events = await rawStream(body);
  const starts = events.filter((e) => e.event === 'content_block_start').map((e) => JSON.parse(e.data));
  t.same(starts[1].content_block, { type: 'tool_use', id: starts[1].content_block.id, name: 'get_weather', input: {} });
  const pieces = (index: number) =>
    events
      .filter((e) => e.event === 'content_block_delta' && JSON.parse(e.data).index === index)
      .map((e) => JSON.parse(e.data).delta);
  const first = pieces(1);
  t.ok(first.every((d) => d.type === 'input_json_delta'));
  t.equal(first[0].partial_json, '', 'the first piece is empty, as the vendor sends it');
  t.ok(first.length >= 3, 'then several pieces');
  t.same(JSON.parse(first.map((d) => d.partial_json).join('')), { city: 'value-city', days: 42, metric: true });
  t.same(pieces(2), [{ type: 'input_json_delta', partial_json: '' }], 'no arguments: one empty piece');

  const streamed = await client.messages.stream(body as Anthropic.MessageCreateParams).finalMessage();
  t.same(streamed.content.map((b) => (b.type === 'tool_use' ? b.input : b.type)), ['text', uses[0].input, {}, uses[2].input]);
});

t.test('thinking: block first, thinking and signature deltas, signature checked on the next turn', async (t) => {
  const body = {
    model: 'm',
    max_tokens: 2048,
    thinking: { type: 'enabled' as const, budget_tokens: 1024 },
    tools: [now],
    messages: [{ role: 'user' as const, content: 'Think <<sim words=1 tools=1>>' }],
  };
  const msg = await client.messages.create(body);
  t.same(
    msg.content.map((b) => b.type),
    ['thinking', 'text', 'tool_use'],
  );
  const thinking = msg.content[0] as Anthropic.ThinkingBlock;
  t.equal(thinking.thinking.split(' ').length, 8);
  t.equal(msg.usage.output_tokens, 8 + 1 + Math.ceil('now{}'.length / 4));

  const events = await rawStream(body);
  const deltas = events.filter((e) => e.event === 'content_block_delta' && JSON.parse(e.data).index === 0).map((e) => JSON.parse(e.data).delta);
  t.same(deltas.at(-1), { type: 'signature_delta', signature: thinking.signature }, 'signature just before the block stops');
  t.equal(deltas.slice(0, -1).map((d) => d.thinking).join(''), thinking.thinking);
  t.same(JSON.parse(events[1].data).content_block, { type: 'thinking', thinking: '', signature: '' });

  const adaptive = await client.messages.create({ ...body, thinking: { type: 'adaptive' } });
  t.equal(adaptive.content[0].type, 'thinking', 'adaptive thinking too');

  const toolUse = msg.content[2] as Anthropic.ToolUseBlock;
  const next = (content: Anthropic.ContentBlockParam[]) => ({
    ...body,
    messages: [
      ...body.messages,
      { role: 'assistant' as const, content },
      { role: 'user' as const, content: [{ type: 'tool_result' as const, tool_use_id: toolUse.id, content: '12:00' }] },
    ],
  });
  const ok = await client.messages.create(next(msg.content as Anthropic.ContentBlockParam[]));
  t.equal(ok.type, 'message', 'an unchanged signature is accepted');
  const forged = [{ ...thinking, signature: thinking.signature.slice(1) }, ...msg.content.slice(1)];
  await t.rejects(client.messages.create(next(forged as Anthropic.ContentBlockParam[])), errorWith({ status: 400 }), 'an altered one is refused');
});

t.test('cache usage and stop directives', async (t) => {
  const msg = await client.messages.create({
    model: 'm',
    max_tokens: 10,
    stop_sequences: ['END'],
    messages: [{ role: 'user', content: '<<sim cache_read=300 cache_write=50 stop=stop_sequence>>' }],
  });
  t.match(msg.usage, { cache_read_input_tokens: 300, cache_creation_input_tokens: 50 });
  const split = await client.messages.create({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: '<<sim cache_write=50 cache_write_1h=70>>' }] });
  t.match(split.usage, { cache_creation_input_tokens: 120, cache_creation: { ephemeral_5m_input_tokens: 50, ephemeral_1h_input_tokens: 70 } },
    'cache_write_1h: 1-hour writes, in the total and the split');
  t.equal(msg.stop_reason, 'stop_sequence');
  t.equal(msg.stop_sequence, 'END');

  const cut = await client.messages.create({ model: 'm', max_tokens: 3, messages: [{ role: 'user', content: 'long' }] });
  t.equal(cut.stop_reason, 'max_tokens');
  t.equal(cut.usage.output_tokens, 3);
  t.equal((cut.content[0] as Anthropic.TextBlock).text.split(' ').length, 3);
});

t.test('count_tokens counts system, messages, tool results and tool definitions', async (t) => {
  const body = {
    model: 'm',
    system: [{ type: 'text' as const, text: 'System text' }],
    tools: [weather],
    messages: [
      { role: 'user' as const, content: 'What is the weather?' },
      { role: 'assistant' as const, content: [{ type: 'tool_use' as const, id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }] },
      { role: 'user' as const, content: [{ type: 'tool_result' as const, tool_use_id: 'toolu_1', content: [{ type: 'text' as const, text: 'Sunny' }] }] },
    ],
  };
  const count = await client.messages.countTokens(body);
  const chars = 'System text'.length + 'What is the weather?'.length + '{"city":"Oslo"}'.length + 'Sunny'.length + JSON.stringify([weather]).length;
  t.equal(count.input_tokens, Math.ceil(chars / 4));
  t.equal(simulatedInputTokens(body, 'messages'), count.input_tokens);
});

t.test('models list, messages shape with an anthropic-version header', async (t) => {
  const page = await client.models.list();
  t.ok(page.data.length > 0);
  for (const m of page.data) t.match(m, { type: 'model', id: String, display_name: String, created_at: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/ });
  const raw = (await (await fetch(sim.url + '/v1/models', { headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' } })).json()) as any;
  t.match(raw, { has_more: false, first_id: raw.data[0].id, last_id: raw.data.at(-1).id });
});

t.test('errors in the messages shape: auth, version header, malformed JSON, vendor rules', async (t) => {
  const post = async (body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(sim.url + '/v1/messages', {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const user = (content: unknown) => ({ role: 'user', content });
  const ok = { model: 'm', max_tokens: 5, messages: [user('x')] };

  t.equal((await post(ok)).status, 200, 'x-api-key is accepted');
  t.equal((await post(ok, { 'x-api-key': '', authorization: `Bearer ${KEY}` })).status, 200, 'so is a bearer token');
  const denied = await post(ok, { 'x-api-key': 'nope' });
  t.match(denied, { status: 401, body: { type: 'error', error: { type: 'authentication_error', message: String } } });
  const bad = new Anthropic({ baseURL: sim.url, apiKey: 'nope', maxRetries: 0 });
  await t.rejects(bad.messages.create({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }), errorWith({ status: 401 }));

  const noVersion = await fetch(sim.url + '/v1/messages', { method: 'POST', headers: { 'x-api-key': KEY }, body: JSON.stringify(ok) });
  t.equal(noVersion.status, 400, 'anthropic-version is required');
  t.match(await noVersion.json(), { type: 'error', error: { type: 'invalid_request_error', message: /anthropic-version/ } });

  t.match(await post('{"model":'), { status: 400, body: { type: 'error', error: { type: 'invalid_request_error' } } });
  t.match(await post({ model: 'm', messages: [user('x')] }), { status: 400, body: { error: { message: /max_tokens/ } } });
  t.match(await post({ max_tokens: 5, messages: [user('x')] }), { status: 400, body: { error: { message: /model/ } } });
  t.match(await post({ model: 'm', max_tokens: 5 }), { status: 400, body: { error: { message: /messages/ } } });

  const rules: [string, object][] = [
    ['empty text block', { ...ok, messages: [user([{ type: 'text', text: '' }])] }],
    ['image media type', { ...ok, messages: [user([{ type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: 'AA==' } }])] }],
    ['five cache breakpoints', { ...ok, messages: [user(Array.from({ length: 5 }, () => ({ type: 'text', text: 'a', cache_control: { type: 'ephemeral' } })))] }],
    ['tool id pattern', { ...ok, tools: [now], messages: [user('x'), { role: 'assistant', content: [{ type: 'tool_use', id: 'call.1', name: 'now', input: {} }] }, user([{ type: 'tool_result', tool_use_id: 'call.1' }])] }],
    ['tool blocks without tools', { ...ok, messages: [user('x'), { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'now', input: {} }] }, user([{ type: 'tool_result', tool_use_id: 't1' }])] }],
    ['tool_use without its result', { ...ok, tools: [now], messages: [user('x'), { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'now', input: {} }] }, user('y')] }],
    ['tool_result not first', { ...ok, tools: [now], messages: [user('x'), { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'now', input: {} }] }, user([{ type: 'text', text: 'y' }, { type: 'tool_result', tool_use_id: 't1' }])] }],
    ['thinking budget', { ...ok, max_tokens: 1000, thinking: { type: 'enabled', budget_tokens: 1024 } }],
    ['temperature above 1', { ...ok, temperature: 1.5 }],
    ['whitespace stop sequence', { ...ok, stop_sequences: [' '] }],
  ];
  for (const [name, body] of rules) t.match(await post(body), { status: 400, body: { type: 'error', error: { type: 'invalid_request_error' } } }, name);
  const paired = { ...ok, tools: [now], messages: [user('x'), { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'now', input: {} }] }, user([{ type: 'tool_result', tool_use_id: 't1' }, { type: 'text', text: 'y' }])] };
  t.equal((await post(paired)).status, 200, 'a well-formed tool turn is accepted');

  const missing = await fetch(sim.url + '/v1/nothing', { method: 'POST', headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' }, body: '{}' });
  t.equal(missing.status, 404);
});

t.test('documents as the vendor takes them: PDFs (base64, URL), text, blocks, files; tool definitions with newer fields', async (t) => {
  const post = async (body: object) => {
    const res = await fetch(sim.url + '/v1/messages', {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', max_tokens: 5, ...body }),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const pdf = { type: 'base64', media_type: 'application/pdf', data: pdfBase64({ pages: 3 }) };
  const ask = (...blocks: object[]) => ({ messages: [{ role: 'user', content: [...blocks, { type: 'text', text: 'Summarize' }] }] });
  const ok = await post({
    ...ask(
      { type: 'document', source: pdf, title: 'Report', citations: { enabled: true }, cache_control: { type: 'ephemeral' } },
      { type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } },
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Plain text' } },
      { type: 'document', source: { type: 'content', content: [{ type: 'text', text: 'A block' }] } },
      { type: 'document', source: { type: 'file', file_id: 'file_011' } },
      { type: 'image', source: { type: 'file', file_id: 'file_012' } },
    ),
    tools: [{ name: 'now', input_schema: { type: 'object' }, eager_input_streaming: true, defer_loading: false, input_examples: [{}] }],
  });
  t.equal(ok.status, 200, JSON.stringify(ok.body));
  const plain = await post(ask());
  t.ok(ok.body.usage.input_tokens >= plain.body.usage.input_tokens + 3 * 2000, `a 3-page PDF reads as pages (${ok.body.usage.input_tokens} input tokens)`);

  const rules: [string, object][] = [
    ['a base64 document that is not a PDF', ask({ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'aGVsbG8=' } })],
    ['a base64 document of another type', ask({ type: 'document', source: { ...pdf, media_type: 'text/csv' } })],
    ['a text document of another type', ask({ type: 'document', source: { type: 'text', media_type: 'text/html', data: 'x' } })],
    ['a URL that is not http', ask({ type: 'document', source: { type: 'url', url: 'file:///etc/passwd' } })],
    ['an unknown source', ask({ type: 'document', source: { type: 'ftp' } })],
    ['a file without its id', ask({ type: 'document', source: { type: 'file' } })],
    ['a document in an assistant turn', { messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: [{ type: 'document', source: pdf }] }] }],
  ];
  for (const [name, body] of rules) t.match(await post(body), { status: 400, body: { type: 'error', error: { type: 'invalid_request_error' } } }, name);
});
