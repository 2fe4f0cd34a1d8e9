// A config reload that moves a provider to another address: the next request goes to the new one
// (the transport keeps a long-lived proxy server per provider, so it must key it by address too).
import t, { type Test } from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startGateway } from '../helpers/gateway.js';
import { postChat } from '../helpers/post-chat.js';

/** A chat-format upstream that answers every request with its own name. */
async function upstream(t: Test, name: string): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hits++;
      const body = JSON.stringify({
        id: `chatcmpl-${name}`, object: 'chat.completion', created: 1, model: 'up',
        choices: [{ index: 0, message: { role: 'assistant', content: `from ${name}` }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, hits: () => hits };
}

t.test('a reload that moves a provider sends the next request to its new address', async (t) => {
  const a = await upstream(t, 'a');
  const b = await upstream(t, 'b');
  const gw = await startGateway({
    configure(cfg) {
      cfg.providers = [{ id: 'up', format: 'chat', base_url: a.url, api_key: 'sk-upstream-test' }];
      cfg.models = [{ id: 'm', context_window: 8000, max_output_tokens: 100 }];
      cfg.offers = [{ listing: 'm@up', model: 'm', provider: 'up', upstream_model: 'up', price: { input: 1, output: 1 } }];
    },
  });
  t.teardown(() => gw.close());
  const body = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
  const first = await postChat(gw.url, gw.apiKey, body);
  t.equal(first.json.choices[0].message.content, 'from a');
  await gw.gateway.reload({ ...gw.config, providers: gw.config.providers.map((p) => ({ ...p, base_url: b.url })) });
  const second = await postChat(gw.url, gw.apiKey, body);
  t.equal(second.json.choices[0].message.content, 'from b', 'the moved provider answers');
  t.same([a.hits(), b.hits()], [1, 1]);
});
