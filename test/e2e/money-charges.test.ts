// Money through the running gateway: exact charges from the upstream's usage, a stream the client
// abandons or the upstream breaks (partial charge, no open hold), an upstream that fails before the
// first byte (hold released, failure in history), and concurrent requests against little credit.
import t from 'tap';
import http from 'node:http';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { checkInvariants } from '../helpers/invariants.js';
import type { HistoryRow } from '../../lib/store/types.js';

let gw: TestGateway;
t.before(async () => {
  gw = await startGateway({ creditUsd: 10 });
});
t.teardown(() => gw.close());

interface Reply {
  status: number;
  requestId: string;
  text: string;
}

/** POST a JSON body; `abortAfter` destroys the connection once that many bytes of body arrived. */
function post(path: string, body: object, opts: { key?: string; abortAfter?: number } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${opts.key ?? gw.apiKey}`, 'content-type': 'application/json' },
    }, (res) => {
      let text = '';
      const done = () => resolve({ status: res.statusCode!, requestId: String(res.headers['x-request-id']), text });
      res.setEncoding('utf8');
      res.on('data', (c) => {
        text += c;
        if (opts.abortAfter !== undefined && text.length >= opts.abortAfter) {
          req.destroy();
          done();
        }
      });
      res.on('end', done);
    });
    req.on('error', (e) => (opts.abortAfter === undefined ? reject(e) : undefined));
    req.end(JSON.stringify(body));
  });
}

/** The history row, once the request's onDone has written it (the gateway finishes after the client). */
async function historyRow(requestId: string): Promise<HistoryRow> {
  await gw.gateway.requestFinished(requestId);
  const row = await gw.store.history.get(requestId);
  if (!row) throw new Error(`no history row for ${requestId}`);
  return row;
}

const balance = async () => (await gw.store.ledger.balance(gw.accountId)).balance;

t.test('a chat request is charged exactly its usage at the offer price', async (t) => {
  const before = await balance();
  const r = await post('/v1/chat/completions', { model: 'test/gpt', max_tokens: 100, messages: [{ role: 'user', content: 'Hi <<sim words=7>>' }] });
  t.equal(r.status, 200);
  const usage = JSON.parse(r.text).usage;
  const cost = usage.prompt_tokens * 2500 + usage.completion_tokens * 10000; // test/gpt@sim-chat: $2.5 / $10 per M
  const row = await historyRow(r.requestId);
  t.match(row, { status: 'ok', httpStatus: 200, listing: 'test/gpt@sim-chat', costNano: cost, stream: false,
    usage: { input: usage.prompt_tokens, output: 7 } });
  t.ok(row.holdNano >= cost, 'the hold covered the charge');
  t.equal(before - (await balance()), cost);
  t.same(await checkInvariants(gw.store, { noOpenHolds: true }), []);
});

t.test('1-hour cache writes at their own price, in both client formats', async (t) => {
  // test/claude@sim-messages: 3 / 15 / 0.3 / 3.75 $/M and no cache_write_1h: 1-hour writes at 2 × input (6 $/M).
  const before = await balance();
  // A prompt long enough to hold the cache writes the simulator reports (a real one cannot cache more than it sent).
  const prompt = `${'cached context '.repeat(400)}<<sim words=9 cache_write=200 cache_write_1h=300>>`;
  // The vendor writes to the 1-hour cache only when the request asks for that TTL.
  const content = [{ type: 'text', text: prompt, cache_control: { type: 'ephemeral', ttl: '1h' } }];
  const m = await post('/v1/messages', { model: 'test/claude', max_tokens: 100, stream: true, messages: [{ role: 'user', content }] });
  t.equal(m.status, 200);
  const start = JSON.parse(/event: message_start\ndata: (.*)/.exec(m.text)![1]).message.usage;
  t.match(start, { cache_creation_input_tokens: 500, cache_creation: { ephemeral_5m_input_tokens: 200, ephemeral_1h_input_tokens: 300 } });
  const row = await historyRow(m.requestId);
  t.same(row.usage, { input: start.input_tokens, output: 9, cacheRead: 0, cacheWrite: 500, cacheWrite1h: 300 });
  const cost = start.input_tokens * 3000 + 9 * 15000 + 200 * 3750 + 300 * 6000;
  t.equal(row.costNano, cost);
  t.ok(row.holdNano >= cost, 'the hold covered the 1-hour writes');

  // A chat client of the same messages upstream: prompt_tokens includes every cache write.
  const c = await post('/v1/chat/completions', { model: 'test/claude', max_tokens: 100, messages: [{ role: 'user', content }] });
  t.equal(c.status, 200);
  const usage = JSON.parse(c.text).usage;
  const chatRow = await historyRow(c.requestId);
  t.equal(usage.prompt_tokens, chatRow.usage.input + 500, 'prompt_tokens = input + all cache writes');
  t.equal(usage.total_tokens, usage.prompt_tokens + 9);
  t.same(chatRow.usage, { input: chatRow.usage.input, output: 9, cacheRead: 0, cacheWrite: 500, cacheWrite1h: 300 });
  t.equal(chatRow.costNano, chatRow.usage.input * 3000 + 9 * 15000 + 200 * 3750 + 300 * 6000);
  t.equal(before - (await balance()), cost + chatRow.costNano);
  t.same(await checkInvariants(gw.store, { noOpenHolds: true }), []);
});

t.test('a messages stream with cache tokens: each class at its own price', async (t) => {
  const before = await balance();
  const r = await post('/v1/messages', { model: 'test/claude', max_tokens: 100, stream: true,
    messages: [{ role: 'user', content: 'Hi <<sim words=9 cache_read=1000 cache_write=200>>' }] });
  t.equal(r.status, 200);
  const start = JSON.parse(/event: message_start\ndata: (.*)/.exec(r.text)![1]).message.usage;
  const row = await historyRow(r.requestId);
  t.same(row.usage, { input: start.input_tokens, output: 9, cacheRead: 1000, cacheWrite: 200, cacheWrite1h: 0 });
  const cost = start.input_tokens * 3000 + 9 * 15000 + 1000 * 300 + 200 * 3750;
  t.equal(row.costNano, cost);
  t.equal(before - (await balance()), cost);
});

t.test('a stream the client abandons is charged for what was produced, and its hold ends', async (t) => {
  const before = await balance();
  const r = await post('/v1/messages', { model: 'test/claude', max_tokens: 4000, stream: true,
    messages: [{ role: 'user', content: 'long <<sim words=2000 delay_ms=5>>' }] }, { abortAfter: 1500 });
  const row = await historyRow(r.requestId);
  t.equal(row.status, 'client_gone');
  t.ok(row.usage.output > 0 && row.usage.output < 2000, `charged ${row.usage.output} output tokens of 2000`);
  t.ok(row.costNano > 0 && row.costNano < row.holdNano, 'a partial charge, below the hold');
  t.equal(before - (await balance()), row.costNano);
  t.same(await checkInvariants(gw.store, { noOpenHolds: true }), [], 'no open hold');
});

t.test('a stream the upstream breaks mid-way: partial charge, error in history', async (t) => {
  const before = await balance();
  const r = await post('/v1/chat/completions', { model: 'test/gpt', stream: true, max_tokens: 500,
    messages: [{ role: 'user', content: 'Hi <<sim words=60 chunks=30 fault=reset_mid_stream after=10>>' }] });
  t.equal(r.status, 200);
  const row = await historyRow(r.requestId);
  t.match(row, { status: 'error', listing: 'test/gpt@sim-chat', error: /upstream stream broke/ });
  t.ok(row.usage.output > 0 && row.usage.output < 60, `output estimated from the text streamed: ${row.usage.output}`);
  t.ok(row.usage.input > 0, 'input estimated (the chat stream reports usage only at its end)');
  t.equal(before - (await balance()), row.costNano);
  t.same(await checkInvariants(gw.store, { noOpenHolds: true }), []);
});

t.test('every offer fails before the first byte: hold released, nothing charged, failure recorded', async (t) => {
  const before = await balance();
  const r = await post('/v1/chat/completions', { model: 'test/gpt', max_tokens: 50, stream: true,
    messages: [{ role: 'user', content: 'Hi <<sim fault=status status=503>>' }] });
  t.equal(r.status, 503);
  const row = await historyRow(r.requestId);
  t.match(row, { status: 'error', httpStatus: 503, costNano: 0, listing: null, ttfbMs: null,
    attempts: [{ listing: 'test/gpt@sim-chat', outcome: 'failed' }, { listing: 'test/gpt@sim-messages', outcome: 'failed' }] });
  t.ok(row.holdNano > 0, 'a hold was taken');
  t.equal(await balance(), before, 'and released in full');
  t.same(await checkInvariants(gw.store, { noOpenHolds: true }), []);
});

t.test('concurrent requests against little credit never overspend', async (t) => {
  const { store } = gw;
  const account = await store.accounts.create({ email: 'poor@example.com' });
  await store.ledger.grant(account.id, 5_000_000, 'a little');
  const { secret } = await store.keys.create({ accountId: account.id, name: 'poor' });
  const replies = await Promise.all(Array.from({ length: 40 }, () =>
    post('/v1/chat/completions', { model: 'test/gpt', max_tokens: 100,
      messages: [{ role: 'user', content: 'Hi <<sim words=50 delay_ms=5>>' }] }, { key: secret })));
  const ok = replies.filter((r) => r.status === 200).length;
  const refused = replies.filter((r) => r.status === 402);
  t.equal(ok + refused.length, 40, 'each request either ran or got 402');
  t.ok(ok > 0 && refused.length > 0, `${ok} ran, ${refused.length} refused`);
  t.match(JSON.parse(refused[0].text), { error: { code: 'insufficient_credit', type: 'insufficient_quota' } });
  // Served requests all have rows; of the key's refusals the first 20 of the minute do and the rest
  // are counted in a summary row (see History.recordRefusal). Refusals cost nothing either way.
  const rows = await Promise.all(replies.filter((r) => r.status === 200).map((r) => historyRow(r.requestId)));
  for (const r of refused) await gw.gateway.requestFinished(r.requestId);
  const all = await store.history.list(account.id, { limit: 100 });
  const notRecorded = all.reduce((n, r) => n + (r.notRecorded ?? 0), 0);
  t.equal(all.filter((r) => r.httpStatus === 402).length + notRecorded, refused.length, 'every refusal recorded or counted');
  const spent = rows.reduce((n, r) => n + r.costNano, 0);
  const left = (await store.ledger.balance(account.id)).balance;
  t.ok(left >= 0, `balance ${left} ≥ 0: overspend 0`);
  t.equal(5_000_000 - left, spent, 'the balance moved by exactly the recorded costs');
  t.same(await checkInvariants(store, { noOpenHolds: true }), []);
});
