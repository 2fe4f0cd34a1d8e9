// 200 concurrent requests against a balance that covers 20 holds, and against a monthly limit that
// covers 20: overspend 0. And GET /v1/models in both shapes through the official SDKs.
import t from 'tap';
import http from 'node:http';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { checkInvariants } from '../helpers/invariants.js';

let gw: TestGateway;
t.before(async () => {
  gw = await startGateway({ creditUsd: 0 });
});
t.teardown(() => gw.close());

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
t.teardown(() => agent.destroy());

/** A slow stream (~300 ms), so the 200 requests are all in flight together. */
const body = JSON.stringify({ model: 'test/gpt', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Hi <<sim words=6 delay_ms=50>>' }] });

function post(key: string): Promise<{ status: number; id: string; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${gw.url}/v1/chat/completions`, { method: 'POST', agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, id: String(res.headers['x-request-id']), text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The hold one such request takes, read from its history row. */
async function holdOfOneRequest(key: string): Promise<number> {
  const r = await post(key);
  t.equal(r.status, 200, r.text);
  await gw.gateway.requestFinished(r.id);
  return (await gw.store.history.get(r.id))!.holdNano;
}

/** A new account with `credit` nano-USD and a key (optionally with a monthly limit). */
async function account(email: string, credit: number, monthlyLimitNano?: number) {
  const acct = await gw.store.accounts.create({ email });
  await gw.store.ledger.grant(acct.id, credit, 'test');
  const { key, secret } = await gw.store.keys.create({ accountId: acct.id, name: 'k', monthlyLimitNano });
  return { acct, key, secret };
}

t.test('200 concurrent requests, credit for 20 holds: overspend 0', async (t) => {
  const hold = await holdOfOneRequest((await account('probe1@example.com', 1_000_000_000)).secret);
  const { acct, secret } = await account('credit20@example.com', Math.floor(hold * 20.5));

  const results = await Promise.all(Array.from({ length: 200 }, () => post(secret)));
  const ok = results.filter((r) => r.status === 200).length;
  const refused = results.filter((r) => r.status === 402);
  t.equal(ok + refused.length, 200, 'every answer is a 200 or a 402');
  t.ok(ok >= 20, `${ok} admitted (at least the 20 the balance covers while all are in flight)`);
  t.match(JSON.parse(refused[0].text).error, { code: 'insufficient_credit' });
  await Promise.all(results.map((r) => gw.gateway.requestFinished(r.id)));
  const end = await gw.store.ledger.balance(acct.id);
  t.ok(end.balance >= 0, `balance never below zero (${end.balance})`);
  t.equal(end.held, 0, 'no hold left open');
  t.same(await checkInvariants(gw.store, { noOpenHolds: true }), []);
});

t.test('200 concurrent requests, a monthly limit for 20 holds: the limit is never exceeded', async (t) => {
  const hold = await holdOfOneRequest((await account('probe2@example.com', 1_000_000_000)).secret);
  const limit = Math.floor(hold * 20.5);
  const { key, secret } = await account('limit20@example.com', 1_000_000_000_000, limit);

  const results = await Promise.all(Array.from({ length: 200 }, () => post(secret)));
  const ok = results.filter((r) => r.status === 200).length;
  const refused = results.filter((r) => r.status === 402);
  t.equal(ok + refused.length, 200);
  t.ok(ok >= 20, `${ok} admitted`);
  t.match(JSON.parse(refused[0].text).error, { code: 'monthly_limit_reached' });
  await Promise.all(results.map((r) => gw.gateway.requestFinished(r.id)));
  const mtd = await gw.store.ledger.monthToDate(key.id);
  t.ok(mtd <= limit, `month-to-date ${mtd} within the limit ${limit}`);
  t.same(await checkInvariants(gw.store, { noOpenHolds: true }), []);
});

t.test('GET /v1/models through both SDKs: both shapes, filtered by the key and the routing settings', async (t) => {
  const acct = await gw.store.accounts.create({ email: 'models@example.com' });
  await gw.store.ledger.grant(acct.id, 1_000_000_000, 'c');
  const all = await gw.store.keys.create({ accountId: acct.id, name: 'all' });
  const onlyGpt = await gw.store.keys.create({ accountId: acct.id, name: 'gpt', allowedModels: ['test/gpt'] });

  const openai = (key: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
  const anthropic = (key: string) => new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0 });

  const chatList = [];
  for await (const m of openai(all.secret).models.list()) chatList.push(m);
  t.same(chatList.map((m) => m.id).sort(), ['test/claude', 'test/gpt']);
  t.equal(chatList[0].object, 'model');

  const msgList = [];
  for await (const m of anthropic(all.secret).models.list()) msgList.push(m);
  t.same(msgList.map((m) => m.id).sort(), ['test/claude', 'test/gpt']);
  t.equal(msgList[0].type, 'model');
  t.match(msgList[0].created_at, /^\d{4}-\d\d-\d\dT/);
  t.ok(msgList.find((m) => m.id === 'test/claude')?.display_name === 'Test Claude');

  const limited = [];
  for await (const m of openai(onlyGpt.secret).models.list()) limited.push(m.id);
  t.same(limited, ['test/gpt'], "the key's allowed models");

  // Routing: deny test/gpt; a price cap under test/claude's cheapest output price (15 USD/M) hides it too.
  await gw.store.routing.set(acct.id, { deny: ['test/gpt'] });
  const denied = [];
  for await (const m of openai(all.secret).models.list()) denied.push(m.id);
  t.same(denied, ['test/claude']);
  await gw.store.routing.set(acct.id, { deny: [], priceCapOutput: 14_000 });
  const capped = [];
  for await (const m of anthropic(all.secret).models.list()) capped.push(m.id);
  t.same(capped, ['test/gpt'], 'test/claude has no offer under the cap');
  await t.rejects(
    openai(all.secret).chat.completions.create({ model: 'test/claude', messages: [{ role: 'user', content: 'x' }], max_tokens: 5 }),
    { status: 503, message: /price cap/ },
    'what is not listed cannot be called',
  );
  await t.rejects(
    openai(onlyGpt.secret).chat.completions.create({ model: 'test/claude', messages: [{ role: 'user', content: 'x' }], max_tokens: 5 }),
    { status: 403, message: /allowed models/ },
  );
});
