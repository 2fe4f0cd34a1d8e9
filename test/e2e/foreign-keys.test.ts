// A client left configured with its vendor's key (ANTHROPIC_API_KEY, OPENAI_API_KEY…) is told that
// the key belongs to another service, in its own format, through the official SDKs as well; a
// placeholder is still called one. Nothing reaches an upstream.
import t from 'tap';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { foreignKeys } from '../helpers/foreign-keys.js';

let gw: TestGateway;
t.before(async () => {
  gw = await startGateway();
});
t.teardown(() => gw.close());

const chatBody = JSON.stringify({ model: 'test/gpt', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
const messagesBody = JSON.stringify({ model: 'test/claude', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });

const post = (path: string, body: string, headers: Record<string, string>) =>
  fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

t.test('each family of vendor keys, on both routes, in both headers: 401 that names it, in the client\'s format', async (t) => {
  gw.sim.clear();
  for (const [what, key, names] of foreignKeys) {
    const chat = await post('/v1/chat/completions', chatBody, { authorization: `Bearer ${key}` });
    t.equal(chat.status, 401, `${what}, chat`);
    const chatError = await chat.json();
    t.match(chatError, { error: { type: 'authentication_error', code: 'invalid_api_key', message: names } }, `${what}: chat shape`);
    t.match(chatError.error.message, /not of this gateway/);
    t.notOk(JSON.stringify(chatError).includes(key.slice(-16)), `${what}: the key is not echoed`);

    const messages = await post('/v1/messages', messagesBody, { 'x-api-key': key, 'anthropic-version': '2023-06-01' });
    t.equal(messages.status, 401, `${what}, messages`);
    const messagesError = await messages.json();
    t.match(messagesError, { type: 'error', error: { type: 'authentication_error', message: names } }, `${what}: messages shape`);
    t.notOk(JSON.stringify(messagesError).includes(key.slice(-16)), `${what}: the key is not echoed`);
  }
  t.equal(gw.sim.received.length, 0, 'nothing reached an upstream');
});

t.test('placeholders still get the placeholder answer', async (t) => {
  for (const placeholder of ['sk-ant-...', 'sk-proj-...', '<API_KEY>', 'sk-service-...']) {
    const r = await post('/v1/messages', messagesBody, { 'x-api-key': placeholder });
    t.equal(r.status, 401);
    t.match(await r.json(), { error: { type: 'authentication_error', message: /incomplete or a placeholder/ } }, placeholder);
  }
});

t.test('as the official SDKs surface it', async (t) => {
  const anthropicKey = foreignKeys.find(([what]) => what === 'Anthropic API key')![1];
  const openaiKey = foreignKeys.find(([what]) => what === 'OpenAI project key')![1];
  const anthropic = new Anthropic({ baseURL: gw.url, apiKey: anthropicKey, maxRetries: 0 });
  const fromAnthropic = await anthropic.messages
    .create({ model: 'test/claude', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] })
    .catch((err: unknown) => err);
  t.ok(fromAnthropic instanceof Anthropic.AuthenticationError, 'Anthropic SDK: AuthenticationError');
  t.match((fromAnthropic as Error).message, /an Anthropic API key .*not of this gateway/);
  const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: openaiKey, maxRetries: 0 });
  const fromOpenai = await openai.chat.completions
    .create({ model: 'test/gpt', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] })
    .catch((err: unknown) => err);
  t.ok(fromOpenai instanceof OpenAI.AuthenticationError, 'OpenAI SDK: AuthenticationError');
  t.match((fromOpenai as Error).message, /an OpenAI project key .*not of this gateway/);
});
