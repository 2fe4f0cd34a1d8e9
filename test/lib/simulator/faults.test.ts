// Fault injection and shaping directives, seen by the SDKs and by raw HTTP clients.
import t from 'tap';
import http from 'node:http';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { SseParser, type SseEvent } from '../../../lib/sse.js';
import { startSimulator } from '../../../lib/simulator/index.js';
import { errorWith } from '../../helpers/error-pattern.js';

const sim = await startSimulator();
t.teardown(() => sim.close());
const openai = new OpenAI({ baseURL: sim.url + '/v1', apiKey: 'k', maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: sim.url, apiKey: 'k', maxRetries: 0 });

interface RawResult {
  status?: number;
  headers?: http.IncomingHttpHeaders;
  events: SseEvent[];
  text: string;
  error?: Error;
  /** ms from the request to each event. */
  times: number[];
}

/** A raw HTTP/1.1 request that reports what arrived before any failure. */
function raw(format: 'chat' | 'messages', body: object, onRequest?: (req: http.ClientRequest) => void): Promise<RawResult> {
  const start = Date.now();
  return new Promise((resolve) => {
    const out: RawResult = { events: [], text: '', times: [] };
    const parser = new SseParser();
    const req = http.request(
      sim.url + (format === 'chat' ? '/v1/chat/completions' : '/v1/messages'),
      { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, agent: false },
      (res) => {
        out.status = res.statusCode;
        out.headers = res.headers;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          out.text += chunk;
          for (const ev of parser.push(chunk)) {
            out.events.push(ev);
            out.times.push(Date.now() - start);
          }
        });
        res.on('end', () => resolve(out));
        res.on('error', (error) => resolve({ ...out, error }));
      },
    );
    req.on('error', (error) => resolve({ ...out, error }));
    onRequest?.(req);
    req.end(JSON.stringify(body));
  });
}

const chatBody = (directive: string, extra: object = {}) => ({ model: 'm', messages: [{ role: 'user' as const, content: `hi <<sim ${directive}>>` }], ...extra });
const messagesBody = (directive: string, extra: object = {}) => ({ model: 'm', max_tokens: 100, messages: [{ role: 'user' as const, content: `hi <<sim ${directive}>>` }], ...extra });

// First in the file: before any SDK call, no HTTP client keeps timers of its own that could come and go.
t.test('fault=stall_before_headers stops waiting when the client goes away', async (t) => {
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const baseline = timers();
  sim.clear();
  let request!: http.ClientRequest;
  const done = raw('chat', chatBody('fault=stall_before_headers'), (req) => (request = req));
  await until(() => sim.received.length === 1);
  t.equal(timers(), baseline + 1, 'the simulator is stalling on a timer');
  request.destroy();
  t.ok((await done).error, 'the client gave up');
  await until(() => timers() === baseline);
  t.equal(timers(), baseline, 'the stall timer is gone');
});

t.test('fault=status: the vendor error shape, default 503, Retry-After when asked', async (t) => {
  const chat = await raw('chat', chatBody('fault=status'));
  t.equal(chat.status, 503);
  t.match(JSON.parse(chat.text), { error: { message: String, type: String, param: null, code: String } });
  t.equal(chat.headers?.['retry-after'], undefined);
  const messages = await raw('messages', messagesBody('fault=status status=529 retry_after=7'));
  t.equal(messages.status, 529);
  t.equal(messages.headers?.['retry-after'], '7');
  t.same(JSON.parse(messages.text), { type: 'error', error: { type: 'overloaded_error', message: 'Simulated upstream failure (529).' } });
  await t.rejects(openai.chat.completions.create(chatBody('fault=status status=429')), errorWith({ status: 429 }));
  await t.rejects(anthropic.messages.create(messagesBody('fault=status status=500')), errorWith({ status: 500 }));
  t.match(JSON.parse((await raw('chat', chatBody('fault=status status=429'))).text), { error: { type: 'rate_limit_error' } });
});

t.test('model=NAME scopes a directive to one upstream model', async (t) => {
  const messages = [{ role: 'user' as const, content: '<<sim model=flaky fault=status status=503>> <<sim model=steady words=2>>' }];
  await t.rejects(openai.chat.completions.create({ model: 'flaky', messages }), errorWith({ status: 503 }));
  const ok = await openai.chat.completions.create({ model: 'steady', messages });
  t.equal(ok.choices[0].message.content?.split(' ').length, 2, 'only the steady directive applied');
  const plain = await openai.chat.completions.create({ model: 'other', messages });
  t.equal(plain.choices[0].message.content?.split(' ').length, 12, 'neither applies to a third model');
});

t.test('fault=reset_before_headers: the socket closes without a response; the request is still recorded', async (t) => {
  sim.clear();
  const res = await raw('chat', chatBody('fault=reset_before_headers'));
  t.equal(res.status, undefined);
  t.match(res.error, { code: 'ECONNRESET' });
  t.equal(sim.received.length, 1);
  await t.rejects(anthropic.messages.create(messagesBody('fault=reset_before_headers')), Anthropic.APIConnectionError);
});

t.test('fault=reset_mid_stream: K events, then the socket breaks', async (t) => {
  const chat = await raw('chat', chatBody('fault=reset_mid_stream after=3', { stream: true }));
  t.equal(chat.status, 200);
  t.equal(chat.events.length, 3);
  t.ok(chat.error, `the response fails (${chat.error?.message})`);
  const messages = await raw('messages', messagesBody('fault=reset_mid_stream', { stream: true }));
  t.same(messages.events.map((e) => e.event), ['message_start', 'content_block_start'], 'default after=2');
  t.ok(messages.error);
  const nonStream = await raw('chat', chatBody('fault=reset_mid_stream'));
  t.equal(nonStream.status, 200);
  t.ok(nonStream.error, 'a whole body breaks half way');
  t.ok(nonStream.text.length > 0);
});

t.test('fault=stall_before_headers waits ms, then answers', async (t) => {
  const res = await raw('chat', chatBody('fault=stall_before_headers ms=150'));
  t.equal(res.status, 200);
  t.ok(res.times.length === 0 && JSON.parse(res.text).choices, 'a normal answer');
  const started = Date.now();
  await openai.chat.completions.create(chatBody('fault=stall_before_headers ms=150'));
  t.ok(Date.now() - started >= 145, 'after the stall');
});

t.test('fault=stall_mid_stream: K events, a pause, then the rest', async (t) => {
  const res = await raw('messages', messagesBody('fault=stall_mid_stream after=2 ms=300 words=2', { stream: true }));
  t.equal(res.events.at(-1)?.event, 'message_stop', 'the stream completes');
  t.ok(res.times[1] < 300 && res.times[2] >= 295, `a pause after event 2 (events at ${res.times.slice(0, 3).join(', ')} ms)`);
  const body = await raw('chat', chatBody('fault=stall_mid_stream ms=100'));
  t.equal(JSON.parse(body.text).object, 'chat.completion', 'a whole body arrives after its stall');
});

t.test('fault=malformed_event: the SDKs fail to parse the stream', async (t) => {
  const res = await raw('chat', chatBody('fault=malformed_event after=2', { stream: true }));
  t.equal(res.events.length, 3);
  t.throws(() => JSON.parse(res.events[2].data));
  const chatStream = await openai.chat.completions.create({ ...chatBody('fault=malformed_event'), stream: true });
  await t.rejects(async () => {
    for await (const _ of chatStream);
  }, SyntaxError);
  const messagesStream = anthropic.messages.stream(messagesBody('fault=malformed_event after=3'));
  await t.rejects(messagesStream.finalMessage());
  await t.rejects(openai.chat.completions.create(chatBody('fault=malformed_event')), 'a truncated whole body fails too');
});

t.test('fault=error_after_200: a 200, then the vendor in-stream error', async (t) => {
  const chat = await raw('chat', chatBody('fault=error_after_200', { stream: true }));
  t.equal(chat.status, 200);
  t.equal(chat.events.length, 1, 'default after=0: the error comes first');
  t.match(JSON.parse(chat.events[0].data), { error: { message: String, type: String } });
  t.notMatch(chat.text, '[DONE]', 'and the stream ends');
  const messages = await raw('messages', messagesBody('fault=error_after_200 after=3', { stream: true }));
  t.same(messages.events.map((e) => e.event), ['message_start', 'content_block_start', 'ping', 'error']);
  t.same(JSON.parse(messages.events[3].data), { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });

  const chatStream = await openai.chat.completions.create({ ...chatBody('fault=error_after_200 after=2'), stream: true });
  await t.rejects(async () => {
    for await (const _ of chatStream);
  }, { message: 'Overloaded', error: { message: 'Overloaded', type: String } });
  await t.rejects(anthropic.messages.stream(messagesBody('fault=error_after_200')).finalMessage(), errorWith({ error: { error: { type: 'overloaded_error' } } }));
  const body = await raw('messages', messagesBody('fault=error_after_200'));
  t.match({ status: body.status, body: JSON.parse(body.text) }, { status: 200, body: { type: 'error', error: { type: 'overloaded_error' } } });
});

t.test('fault=no_usage: no usage chunk or field on chat, zeros on messages', async (t) => {
  const chat = await raw('chat', chatBody('fault=no_usage words=2', { stream: true, stream_options: { include_usage: true } }));
  const chunks = chat.events.filter((e) => e.data !== '[DONE]').map((e) => JSON.parse(e.data));
  t.ok(chunks.every((c) => c.usage === null && c.choices.length === 1), 'no usage chunk');
  t.equal(chat.events.at(-1)?.data, '[DONE]');
  const whole = await openai.chat.completions.create(chatBody('fault=no_usage'));
  t.notOk('usage' in whole, 'no usage field');
  const messages = await raw('messages', messagesBody('fault=no_usage', { stream: true }));
  const delta = JSON.parse(messages.events.find((e) => e.event === 'message_delta')!.data);
  t.same(delta.usage, { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0,
    cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 }, output_tokens: 0 });
  const msg = await anthropic.messages.create(messagesBody('fault=no_usage'));
  t.equal(msg.usage.output_tokens, 0);
});

t.test('delay_ms pauses between stream events', async (t) => {
  const res = await raw('chat', chatBody('delay_ms=40 words=3', { stream: true }));
  t.equal(res.events.length, 6);
  t.ok(res.times[5] >= 5 * 40 - 5, `five pauses of 40 ms before the last event (${res.times.join(', ')})`);
});

t.test('a 10 MB stream arrives whole, in ~1 KB deltas', async (t) => {
  const res = await raw('chat', chatBody('bytes=10000000', { stream: true }));
  const contents = res.events.filter((e) => e.data !== '[DONE]').map((e) => JSON.parse(e.data).choices[0]?.delta.content ?? '');
  const total = contents.reduce((n, s) => n + s.length, 0);
  t.ok(total >= 10_000_000 && total < 10_000_100, `10 MB of text (${total})`);
  t.ok(contents.length > 9000, 'in many deltas');
});

t.test('the received ring is bounded; simulators in one process are independent', async (t) => {
  const a = await startSimulator({ maxRecorded: 3 });
  const b = await startSimulator({ apiKey: 'only-b' });
  t.teardown(() => Promise.all([a.close(), b.close()]));
  const client = new OpenAI({ baseURL: a.url + '/v1', apiKey: 'x', maxRetries: 0 });
  for (let i = 0; i < 5; i++) await client.chat.completions.create({ model: `m${i}`, messages: [{ role: 'user', content: 'x' }] });
  t.same(
    a.received.map((r) => r.body.model),
    ['m2', 'm3', 'm4'],
  );
  t.equal(b.received.length, 0);
  await t.rejects(new OpenAI({ baseURL: b.url + '/v1', apiKey: 'x', maxRetries: 0 }).models.list(), errorWith({ status: 401 }));
  t.equal(b.received.length, 1);
  a.clear();
  t.equal(a.received.length, 0);
});

/** Polls a condition the event loop will make true; fails the test by timeout otherwise. */
async function until(cond: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
}
