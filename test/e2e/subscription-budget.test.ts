// Subscription-backed offers (spec section 8): the minimum effective output budget of 16 tokens is
// what the upstream is asked for, on the same-format and the converted paths, in both client
// formats and whichever budget field the client used; the charge is still the actual usage.
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { checkInvariants } from '../helpers/invariants.js';

const USAGE = { input: 11, output: 3 };
const CHARGE = USAGE.input * 1000 + USAGE.output * 2000; // $1 / $2 per million tokens, in nano-USD

/** Both wire formats on one server (chat below /v1), answering 3 output tokens; records each body it got. */
const received: Array<{ path: string; body: Record<string, any> }> = [];
const upstream = http.createServer((req, res) => {
  let text = '';
  req.setEncoding('utf8');
  req.on('data', (c) => (text += c));
  req.on('end', () => {
    const body = JSON.parse(text);
    received.push({ path: req.url!, body });
    const sse = (events: Array<[string | undefined, object | string]>) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const [event, data] of events) res.write(`${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
      res.end();
    };
    const json = (data: object) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(data));
    if (req.url === '/v1/messages') {
      const message = { id: 'msg_1', type: 'message', role: 'assistant', model: body.model, stop_reason: 'end_turn', stop_sequence: null };
      if (!body.stream) return json({ ...message, content: [{ type: 'text', text: 'one two three' }], usage: { input_tokens: USAGE.input, output_tokens: USAGE.output } });
      return sse([
        ['message_start', { type: 'message_start', message: { ...message, stop_reason: null, content: [], usage: { input_tokens: USAGE.input, output_tokens: 1 } } }],
        ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
        ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'one two three' } }],
        ['content_block_stop', { type: 'content_block_stop', index: 0 }],
        ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: USAGE.output } }],
        ['message_stop', { type: 'message_stop' }],
      ]);
    }
    const chunk = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: body.model };
    const usage = { prompt_tokens: USAGE.input, completion_tokens: USAGE.output, total_tokens: USAGE.input + USAGE.output };
    if (!body.stream) {
      return json({ id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: 'one two three' }, finish_reason: 'stop' }], usage });
    }
    sse([
      [undefined, { ...chunk, choices: [{ index: 0, delta: { role: 'assistant', content: 'one two three' }, finish_reason: null }] }],
      [undefined, { ...chunk, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }],
      [undefined, { ...chunk, choices: [], usage }],
      [undefined, '[DONE]'],
    ]);
  });
});

let gw: TestGateway;
t.before(async () => {
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  gw = await startGateway({
    configure(c) {
      c.providers.push({ id: 'rec-messages', format: 'messages', base_url: base, api_key: 'k' });
      c.providers.push({ id: 'rec-chat', format: 'chat', base_url: `${base}/v1`, api_key: 'k' });
      const price = { input: 1, output: 2 };
      for (const [model, provider, subscription] of [['sub/claude', 'rec-messages', true], ['sub/gpt', 'rec-chat', true], ['plain/claude', 'rec-messages', false]] as const) {
        c.models.push({ id: model, context_window: 100000, max_output_tokens: 1000 });
        c.offers.push({ listing: `${model}@${provider}`, model, provider, upstream_model: `${model}-up`, price, subscription });
      }
    },
  });
});
t.teardown(async () => {
  await gw.close();
  await new Promise((resolve) => upstream.close(resolve));
});

/** Sends the request, reads the whole answer; returns what the upstream got and the request's history row. */
async function send(client: 'chat' | 'messages', body: Record<string, any>) {
  const before = received.length;
  const r = await fetch(`${gw.url}${client === 'chat' ? '/v1/chat/completions' : '/v1/messages'}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`${r.status}: ${text}`);
  const id = r.headers.get('x-request-id')!;
  await gw.gateway.requestFinished(id);
  return { calls: received.length - before, up: received.at(-1)!, row: (await gw.store.history.get(id))!, text };
}

const messages = [{ role: 'user', content: 'count to three' }];

const cases: Array<[string, 'chat' | 'messages', Record<string, any>, string, number]> = [
  ['messages client, messages upstream', 'messages', { model: 'sub/claude', max_tokens: 5, messages }, 'max_tokens', 16],
  ['messages client, messages upstream, stream', 'messages', { model: 'sub/claude', max_tokens: 1, messages, stream: true }, 'max_tokens', 16],
  ['messages client, chat upstream', 'messages', { model: 'sub/gpt', max_tokens: 5, messages }, 'max_completion_tokens', 16],
  ['chat client max_tokens, chat upstream', 'chat', { model: 'sub/gpt', max_tokens: 5, messages }, 'max_tokens', 16],
  ['chat client max_completion_tokens, chat upstream, stream', 'chat',
    { model: 'sub/gpt', max_completion_tokens: 5, max_tokens: 2, messages, stream: true }, 'max_completion_tokens', 16],
  ['chat client max_completion_tokens, messages upstream', 'chat', { model: 'sub/claude', max_completion_tokens: 2, messages }, 'max_tokens', 16],
  ['chat client max_tokens, messages upstream, stream', 'chat', { model: 'sub/claude', max_tokens: 5, messages, stream: true }, 'max_tokens', 16],
  ['chat client without a budget, chat upstream', 'chat', { model: 'sub/gpt', messages }, 'max_completion_tokens', 1000],
  ['a budget above the minimum', 'messages', { model: 'sub/claude', max_tokens: 40, messages }, 'max_tokens', 40],
];

for (const [what, client, body, field, asked] of cases) {
  t.test(`${what}: the upstream is asked for ${asked}; the charge is the actual usage`, async (t) => {
    const { calls, up, row } = await send(client, body);
    t.equal(calls, 1, 'one upstream call');
    t.equal(up.body[field], asked, `upstream ${field}`);
    if (field === 'max_completion_tokens') t.notOk('max_tokens' in up.body, 'one budget field upstream');
    t.match(row, { status: 'ok', costNano: CHARGE, usage: { input: USAGE.input, output: USAGE.output } });
    t.ok(row.holdNano >= asked * 2000, `the hold (${row.holdNano}) covers the budget asked for`);
  });
}

t.test('an offer that is not subscription-backed gets the client\'s budget and body as sent', async (t) => {
  const body = { model: 'plain/claude', max_tokens: 5, messages, temperature: 0.5 };
  const { up, row } = await send('messages', body);
  t.strictSame(up.body, { ...body, model: 'plain/claude-up' }, 'nothing but the model name changed');
  t.match(row, { costNano: CHARGE });
  t.same(await checkInvariants(gw.store, { noOpenHolds: true }), []);
});
