// What a same-format upstream receives: the client's own bytes for the values the gateway keeps
// (the conversation as the client spelled it), the gateway's values (model, output budget, usage
// option) serialized in their place, and nothing the offer may not be sent.
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const received: string[] = [];
const upstream = http.createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    received.push(body);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
      id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'raw-up',
      choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 9, completion_tokens: 1, total_tokens: 10 },
    }));
  });
});

let gw: TestGateway;
t.before(async () => {
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const port = (upstream.address() as AddressInfo).port;
  gw = await startGateway({
    configure(c) {
      c.models.push({ id: 'test/raw', context_window: 1_000_000, max_output_tokens: 100 });
      c.providers.push({ id: 'raw', format: 'chat', base_url: `http://127.0.0.1:${port}/v1`, api_key: 'sk-raw' });
      c.offers.push({ listing: 'test/raw@raw', model: 'test/raw', provider: 'raw', upstream_model: 'raw-up', price: { input: 1, output: 2 } });
    },
  });
});
t.teardown(async () => {
  await gw.close();
  upstream.close();
});

function post(text: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end(text);
  });
}

t.test('kept values arrive as the client wrote them, the rest as the gateway set it', async (t) => {
  const messages = '[ {"role": "user",\n  "content": "caf\\u00e9 \\"quoted\\" {not json}"} ]';
  const text = `{"model": "test/raw", "messages": ${messages}, "temperature": 1.0, "max_tokens": 50, "future_field": {"x": 1}}`;
  t.equal(await post(text), 200);
  const got = received.at(-1)!;
  t.ok(got.includes(`"messages": ${messages}`), `the client's messages bytes: ${got}`);
  t.ok(got.includes('"temperature": 1.0,"max_tokens": 50'), 'numbers as the client spelled them');
  t.same(JSON.parse(got), { model: 'raw-up', messages: JSON.parse(messages), temperature: 1, max_tokens: 50 }, 'the model swapped, the unknown field left out');
});

t.test('a budget the client left out is the gateway\'s own value', async (t) => {
  t.equal(await post('{"model":"test/raw","messages":[{"role":"user","content":"hi"}]}'), 200);
  t.equal(received.at(-1), '{"model":"raw-up","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":100}');
});

t.test('a large body (sent as bytes) arrives whole, non-ASCII text included', async (t) => {
  const long = 'café 😀 "q" \\ '.repeat(8000); // over 64 K characters: payloadOf writes bytes
  const text = `{"model": "test/raw", "messages": [{"role": "user", "content": ${JSON.stringify(long)}}], "max_tokens": 50}`;
  t.equal(await post(text), 200);
  const got = received.at(-1)!;
  t.equal(got, `{"model":"raw-up","messages": [{"role": "user", "content": ${JSON.stringify(long)}}],"max_tokens": 50}`);
});
