// The core through the official SDKs: passthrough in both formats, streaming and not, failover
// before the first byte, a break after it, client aborts, routes, limits and headers.
import t from 'tap';
import http from 'node:http';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
t.before(async () => {
  gw = await startGateway();
});
t.teardown(() => gw.close());

const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.apiKey, maxRetries: 0 });
const anthropic = () => new Anthropic({ baseURL: gw.url, apiKey: gw.apiKey, maxRetries: 0 });

/** A raw request to the gateway; resolves with status, headers and body text. */
function raw(path: string, opts: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }>((resolve, reject) => {
    const req = http.request(`${gw.url}${path}`, { method: opts.method ?? 'POST', headers: opts.headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

t.test('chat client, chat upstream, non-stream', async (t) => {
  gw.sim.clear();
  const { data, response } = await openai()
    .chat.completions.create({ model: 'test/gpt', messages: [{ role: 'user', content: 'Hello there <<sim words=5>>' }], max_tokens: 50 })
    .withResponse();
  t.equal(data.choices[0].message.content?.split(' ').length, 5);
  t.equal(data.model, 'test/gpt', 'the client sees the model it asked for');
  t.equal(response.headers.get('x-service-listing'), 'test/gpt@sim-chat');
  t.match(response.headers.get('x-request-id'), /^req_[0-9A-Z]{26}$/);
  const got = gw.sim.received.at(-1)!;
  t.equal(got.body.model, 'gpt-up', 'the upstream gets its own model name');
  t.notOk(JSON.stringify(got.headers).includes(gw.apiKey), 'the client key never reaches the upstream');
});

t.test('messages client, messages upstream, stream', async (t) => {
  const stream = anthropic().messages.stream({
    model: 'test/claude',
    max_tokens: 100,
    messages: [{ role: 'user', content: 'Tell me <<sim words=20 chunks=20>>' }],
  });
  const msg = await stream.finalMessage();
  t.equal(msg.model, 'test/claude');
  t.equal((msg.content[0] as { text: string }).text.split(' ').length, 20);
  t.equal(msg.usage.output_tokens, 20);
  t.equal(msg.stop_reason, 'end_turn');
});

t.test('chat client stream with usage', async (t) => {
  const stream = await openai().chat.completions.create({
    model: 'test/gpt',
    messages: [{ role: 'user', content: 'Stream please <<sim words=8>>' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage: OpenAI.CompletionUsage | undefined | null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  t.equal(text.trim().split(/\s+/).length, 8);
  t.equal(usage?.completion_tokens, 8);
});

t.test('failover before the first byte: 503 on the cheapest offer, the next one serves', async (t) => {
  const { data, response } = await anthropic()
    .messages.create({
      model: 'test/claude',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'Hi <<sim fault=status status=503 model=claude-up>>' }],
    })
    .withResponse();
  t.equal(response.headers.get('x-service-listing'), 'test/claude@sim-chat');
  t.equal(data.content[0].type, 'text');
});

for (const fault of ['reset_before_headers', 'error_after_200', 'malformed_event', 'reset_mid_stream after=0']) {
  t.test(`stream failover when the first offer does ${fault} before any output`, async (t) => {
    const stream = anthropic().messages.stream({
      model: 'test/claude',
      max_tokens: 50,
      messages: [{ role: 'user', content: `Hi <<sim fault=${fault} model=claude-up>>` }],
    });
    const msg = await stream.finalMessage();
    t.ok(msg.content.length > 0);
    const { response } = await stream.withResponse();
    t.equal(response.headers.get('x-service-listing'), 'test/claude@sim-chat');
  });
}

t.test('a break after the first output: the client gets an error event, no failover', async (t) => {
  const stream = anthropic().messages.stream({
    model: 'test/claude',
    max_tokens: 100,
    messages: [{ role: 'user', content: 'Hi <<sim words=30 fault=reset_mid_stream after=6>>' }],
  });
  await t.rejects(stream.finalMessage(), /upstream stream broke/);
  const chat = await openai().chat.completions.create({
    model: 'test/gpt',
    messages: [{ role: 'user', content: 'Hi <<sim words=30 fault=reset_mid_stream after=6>>' }],
    stream: true,
  });
  await t.rejects(
    (async () => {
      for await (const _ of chat);
    })(),
    /upstream stream broke/,
  );
});

t.test("an error event after output reaches a chat client as the upstream's own error chunk", async (t) => {
  const res = await raw('/v1/chat/completions', {
    headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'test/gpt', stream: true, messages: [{ role: 'user', content: 'x <<sim words=10 fault=error_after_200 after=4>>' }] }),
  });
  t.equal(res.status, 200);
  const last = res.text.trim().split('\n\n').at(-1)!;
  t.equal(last, 'data: {"error":{"message":"Overloaded","type":"service_unavailable","param":null,"code":"overloaded"}}', 'as the simulator sent it');
});

t.test('client abort reaches the upstream at once', async (t) => {
  const ac = new AbortController();
  const stream = await anthropic().messages.create(
    { model: 'test/claude', max_tokens: 4000, stream: true, messages: [{ role: 'user', content: 'long <<sim words=2000 delay_ms=20>>' }] },
    { signal: ac.signal },
  );
  let n = 0;
  try {
    for await (const ev of stream) if (ev.type === 'content_block_delta' && ++n === 3) ac.abort();
  } catch {
    /* the SDK reports the abort */
  }
  const upstream = await gw.sim.received.at(-1)!.ended;
  t.equal(upstream.completed, false, 'the upstream response was cut off');
  t.ok(upstream.written < 100, `the upstream stopped early (wrote ${upstream.written} of ~2000 events)`);
});

t.test('routes: unknown paths are 404 in the right shape', async (t) => {
  for (const path of ['/v1/responses', '/v1/realtime', '/v1/batches', '/v1/assistants', '/v1/v1/messages', '/v2/chat/completions']) {
    const r = await raw(path, { headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' }, body: '{}' });
    t.equal(r.status, 404, path);
    t.ok(r.headers['x-request-id'], `${path} has x-request-id`);
    const body = JSON.parse(r.text);
    if (path.includes('messages')) t.equal(body.type, 'error', `${path}: messages shape`);
    else t.equal(typeof body.error.message, 'string', `${path}: chat shape`);
  }
  const v1v1 = JSON.parse((await raw('/v1/v1/messages', { body: '{}' })).text);
  t.match(v1v1.error.message, /\/v1 twice/);
});

t.test('limits: a body over the cap is 413, and the connection survives for others', async (t) => {
  const big = Buffer.alloc(gw.config.server.body_limit_bytes + 10, 'a');
  const r = await raw('/v1/messages', { headers: { 'x-api-key': gw.apiKey, 'content-type': 'application/json' }, body: big });
  t.equal(r.status, 413);
  t.equal(JSON.parse(r.text).error.type, 'request_too_large');
});

t.test('unknown model: 404 naming the model', async (t) => {
  await t.rejects(
    openai().chat.completions.create({ model: 'nope/model', messages: [{ role: 'user', content: 'x' }] }),
    { status: 404, message: /Unknown model "nope\/model"/ },
  );
});

t.test('all offers failing: 503 with Retry-After', async (t) => {
  const r = await raw('/v1/messages', {
    headers: { 'x-api-key': gw.apiKey, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'test/claude', max_tokens: 10, messages: [{ role: 'user', content: 'x <<sim fault=status status=529>>' }] }),
  });
  t.equal(r.status, 503);
  t.ok(Number(r.headers['retry-after']) >= 1);
  const body = JSON.parse(r.text);
  t.equal(body.type, 'error');
  t.match(body.error.message, /test\/claude@sim-chat: upstream 529/);
});

t.test('request ids are unique and sortable by time', async (t) => {
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) ids.push((await raw('/v1/models', { method: 'GET', headers: { 'x-api-key': gw.apiKey } })).headers['x-request-id'] as string);
  t.equal(new Set(ids).size, 20);
  t.same([...ids].sort(), ids);
});

t.test("the vendor's head (rate limits, organization, cookies, CDN) never reaches the client", async (t) => {
  const vendorOnly = ['openai-organization', 'openai-project', 'set-cookie', 'cf-ray', 'server', 'via',
    'anthropic-organization-id', 'anthropic-ratelimit-requests-limit', 'request-id'];
  for (const [path, model, stream] of [['/v1/chat/completions', 'test/gpt', false], ['/v1/chat/completions', 'test/gpt', true], ['/v1/messages', 'test/claude', false], ['/v1/messages', 'test/claude', true]] as const) {
    const body = JSON.stringify({ model, max_tokens: 20, stream, messages: [{ role: 'user', content: 'hi <<sim words=3>>' }] });
    const r = await raw(path, { headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body });
    t.equal(r.status, 200, `${path} ${stream ? 'stream' : 'json'}`);
    t.same(vendorOnly.filter((h) => r.headers[h] !== undefined), [], `${path} ${stream ? 'stream' : 'json'}: none of the vendor's headers`);
    // The gateway's own rate-limit headers, not the vendor's values.
    t.ok(r.headers['x-ratelimit-limit-tokens'], 'the gateway sends its own x-ratelimit-*');
    t.not(r.headers['x-ratelimit-limit-tokens'], '4000000', "x-ratelimit-* are the key's limits, not the vendor's");
  }
});
