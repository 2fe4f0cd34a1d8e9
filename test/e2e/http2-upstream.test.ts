// A provider with `http2: true` is reached over HTTP/2 (http2-wrapper), here against a cleartext
// node:http2 server running the simulated provider.
import t from 'tap';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startSimulator } from '../../lib/simulator/index.js';
import { startGateway } from '../helpers/gateway.js';

t.test('chat and messages upstreams over HTTP/2, stream and not', async (t) => {
  const h2 = await startSimulator({ http2: true });
  t.teardown(() => h2.close());
  const gw = await startGateway({
    configure(c) {
      c.providers.push({ id: 'h2-chat', format: 'chat', base_url: `${h2.url}/v1`, http2: true });
      c.providers.push({ id: 'h2-messages', format: 'messages', base_url: h2.url, http2: true });
      c.offers.push({ listing: 'test/gpt@h2', model: 'test/gpt', provider: 'h2-chat', upstream_model: 'gpt-h2', price: { input: 1, output: 1 } });
      c.offers.push({ listing: 'test/claude@h2', model: 'test/claude', provider: 'h2-messages', upstream_model: 'claude-h2', price: { input: 1, output: 1 } });
    },
  });
  t.teardown(() => gw.close());

  const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.apiKey, maxRetries: 0 });
  const { data, response } = await openai.chat.completions
    .create({ model: 'test/gpt', messages: [{ role: 'user', content: 'over h2 <<sim words=4>>' }], max_tokens: 20 })
    .withResponse();
  t.equal(response.headers.get('x-service-listing'), 'test/gpt@h2');
  t.equal(data.choices[0].message.content?.split(' ').length, 4);

  const anthropic = new Anthropic({ baseURL: gw.url, apiKey: gw.apiKey, maxRetries: 0 });
  const msg = await anthropic.messages.stream({ model: 'test/claude', max_tokens: 50, messages: [{ role: 'user', content: 'h2 stream <<sim words=9>>' }] }).finalMessage();
  t.equal((msg.content[0] as { text: string }).text.split(' ').length, 9);

  t.equal(h2.received.length, 2, 'both requests reached the HTTP/2 server');
  t.equal(h2.received[1].headers['anthropic-version'], '2023-06-01');
  t.notOk(h2.received[0].headers['x-api-key'] ?? h2.received[0].headers.authorization, 'no client credentials forwarded');
});
