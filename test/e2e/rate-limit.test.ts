// Per-key rate limits through the real gateway and the official SDKs: OpenAI's x-ratelimit-* headers
// on every answer, a 429 in each client's own format with Retry-After once a key is over its
// requests or tokens per minute, and for a refused request no hold and no upstream call.
import t from 'tap';
import http from 'node:http';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { checkInvariants } from '../helpers/invariants.js';

let gw: TestGateway;
t.before(async () => {
  gw = await startGateway();
});
t.teardown(() => gw.close());

/** A new key of the test account with its own limits (each test gets fresh windows). */
async function keyWith(limits: { rpm?: number; tpm?: number }): Promise<string> {
  return (await gw.store.keys.create({ accountId: gw.accountId, name: 'limited', ...limits })).secret;
}

const openai = (apiKey: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey, maxRetries: 0 });
const anthropic = (apiKey: string) => new Anthropic({ baseURL: gw.url, apiKey, maxRetries: 0 });
const chat = (key: string, maxTokens = 20, words = 3) =>
  openai(key).chat.completions.create({ model: 'test/gpt', max_tokens: maxTokens, messages: [{ role: 'user', content: `Hi <<sim words=${words}>>` }] }).withResponse();
const messages = (key: string) =>
  anthropic(key).messages.create({ model: 'test/claude', max_tokens: 20, messages: [{ role: 'user', content: 'Hi <<sim words=3>>' }] }).withResponse();

const RATE_HEADERS = ['limit-requests', 'remaining-requests', 'reset-requests', 'limit-tokens', 'remaining-tokens', 'reset-tokens'].map((h) => `x-ratelimit-${h}`);
const rateHeaders = (h: Headers | undefined) => Object.fromEntries(RATE_HEADERS.map((n) => [n.slice('x-ratelimit-'.length), h?.get(n) ?? null]));

async function refusal<E>(p: Promise<unknown>, type: new (...args: any[]) => E): Promise<E> {
  const e = await p.then(() => new Error('admitted'), (err: unknown) => err);
  if (!(e instanceof type)) throw e;
  return e;
}

/** Requests the simulator received and credit held, to show a refusal cost neither. */
async function sideEffects() {
  return { upstream: gw.sim.received.length, held: (await gw.store.ledger.balance(gw.accountId)).held };
}

t.test('over the requests per minute: 429 in both formats with Retry-After and the headers, nothing held or sent', async (t) => {
  const key = await keyWith({ rpm: 2, tpm: 100_000 });
  const first = await chat(key);
  t.match(rateHeaders(first.response.headers), {
    'limit-requests': '2', 'remaining-requests': '1', 'reset-requests': /^(29\.\d+|30)s$/,
    'limit-tokens': '100000', 'remaining-tokens': /^\d+$/, 'reset-tokens': /^\d+ms$/,
  }, 'a success carries the headers; one request of two used: all back in 30 s');
  t.ok(Number(first.response.headers.get('x-ratelimit-remaining-tokens')) < 100_000 - 20, 'tokens admitted on the estimate (input plus max_tokens)');
  const second = await chat(key);
  t.equal(second.response.headers.get('x-ratelimit-remaining-requests'), '0');
  t.match(second.response.headers.get('x-ratelimit-reset-requests'), /^(59(\.\d+)?s|1m0s)$/);
  await gw.gateway.requestFinished(second.response.headers.get('x-request-id')!);

  const before = await sideEffects();
  const c = await refusal(chat(key), OpenAI.APIError);
  t.match(c, { status: 429, type: 'rate_limit_error', code: 'rate_limit_requests', message: /over its limit of 2 requests per minute/ });
  const retry = Number(c.headers?.get('retry-after'));
  t.ok(retry >= 29 && retry <= 30, `Retry-After ${retry}: until one request fits again`);
  t.match(rateHeaders(c.headers), { 'limit-requests': '2', 'remaining-requests': '0', 'limit-tokens': '100000' }, 'the error carries the headers too');

  const m = await refusal(messages(key), Anthropic.APIError);
  t.match(m, { status: 429, error: { type: 'error', error: { type: 'rate_limit_error', message: /over its limit of 2 requests per minute/ } } });
  t.ok(Number(m.headers?.get('retry-after')) >= 1);
  t.equal(m.headers?.get('x-ratelimit-remaining-requests'), '0');
  t.same(await sideEffects(), before, 'no upstream call, no hold');

  for (const e of [c, m]) {
    const id = String(e.headers?.get('x-request-id'));
    await gw.gateway.requestFinished(id);
    await gw.store.flush();
    t.match(await gw.store.history.get(id), { status: 'error', httpStatus: 429, holdNano: 0, costNano: 0 }, 'the refusal ended once, in the history');
  }
  t.same(await checkInvariants(gw.store, { noOpenHolds: true }), []);
});

t.test('count_tokens counts as a request; the models list does not', async (t) => {
  const key = await keyWith({ rpm: 1 });
  const client = anthropic(key);
  for (let i = 0; i < 3; i++) {
    const { response } = await client.models.list().withResponse();
    t.equal(response.headers.get('x-ratelimit-remaining-requests'), '1', `models list ${i + 1}: free, and reports the state`);
  }
  const count = () => client.messages.countTokens({ model: 'test/claude', messages: [{ role: 'user', content: 'Hello there' }] }).withResponse();
  const { response } = await count();
  t.equal(response.headers.get('x-ratelimit-remaining-requests'), '0');
  t.equal(response.headers.get('x-ratelimit-limit-tokens'), '1000000000000', 'the config default where the key has none');
  t.match(await refusal(count(), Anthropic.APIError), { status: 429, error: { error: { type: 'rate_limit_error' } } });
  const models = await client.models.list().withResponse();
  t.equal(models.response.status, 200, 'the models list still answers');
});

t.test('over the tokens per minute: 429 rate_limit_tokens; unused tokens come back when a request ends', async (t) => {
  const key = await keyWith({ tpm: 1000 });
  // Admitted on the estimate (input + 900), corrected to what the answer used (a few tokens).
  const small = await chat(key, 900, 3);
  await gw.gateway.requestFinished(small.response.headers.get('x-request-id')!);
  const again = await chat(key, 900, 3);
  t.equal(again.response.status, 200, 'the first request\'s unused budget came back');
  await gw.gateway.requestFinished(again.response.headers.get('x-request-id')!);

  // This one uses its budget: the window keeps it.
  const big = await chat(key, 600, 1000);
  t.equal(big.data.usage?.completion_tokens, 600);
  await gw.gateway.requestFinished(big.response.headers.get('x-request-id')!);
  const before = await sideEffects();
  const c = await refusal(chat(key, 600, 3), OpenAI.APIError);
  t.match(c, { status: 429, type: 'rate_limit_error', code: 'rate_limit_tokens', message: /over its limit of 1000 tokens per minute/ });
  t.ok(Number(c.headers?.get('retry-after')) >= 1, 'Retry-After');
  t.match(rateHeaders(c.headers), { 'limit-tokens': '1000', 'limit-requests': '1000000000' });
  t.ok(Number(c.headers?.get('x-ratelimit-remaining-tokens')) < 600);
  t.same(await sideEffects(), before, 'no upstream call, no hold');
});

t.test('a request larger than a minute of tokens is refused without a Retry-After', async (t) => {
  const key = await keyWith({ tpm: 100 });
  const c = await refusal(chat(key, 200), OpenAI.APIError);
  t.match(c, { status: 429, code: 'rate_limit_tokens', param: 'max_tokens', message: /more than this API key's limit of 100 tokens per minute\. Lower max_tokens/ });
  t.equal(c.headers?.get('retry-after'), null, 'waiting would not help');
  t.equal(c.headers?.get('x-ratelimit-remaining-tokens'), '100');
});

t.test('a key over its request rate is refused from its headers: the body is never waited for', async (t) => {
  const key = await keyWith({ rpm: 1 });
  await chat(key);
  const status = await new Promise<{ status: number; retryAfter?: string }>((resolve, reject) => {
    const req = http.request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': 100_000 },
    }, (res) => {
      res.resume();
      resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'] as string | undefined });
      req.destroy();
    });
    req.on('error', reject);
    req.flushHeaders(); // headers only: the promised body never comes
  });
  t.match(status, { status: 429, retryAfter: /^\d+$/ });
});
