// A database that stalls writes, through the official SDKs: once the bound of rows waiting to be
// written is reached, requests get a 503 with Retry-After in their own format, nothing is held or
// charged for them, their history rows are kept, and requests are served again once the rows are written.
import t from 'tap';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { checkInvariants } from '../helpers/invariants.js';

let gw: TestGateway;
t.before(async () => {
  // One served request queues 4 rows: its hold, its charge, its history row and its key's last use.
  gw = await startGateway({ maxUnwrittenRows: 4 });
});
t.teardown(() => gw.close());

const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.apiKey, maxRetries: 0 });
const anthropic = () => new Anthropic({ baseURL: gw.url, apiKey: gw.apiKey, maxRetries: 0 });
const chat = () => openai().chat.completions.create({ model: 'test/gpt', max_tokens: 20, messages: [{ role: 'user', content: 'Hi <<sim words=3>>' }] });

t.test('503 billing_unavailable in both formats while the rows cannot be written, served again after', async (t) => {
  const lock = new Database(gw.dbPath);
  t.teardown(() => lock.close());
  lock.exec('BEGIN IMMEDIATE'); // the store's writer thread waits for this lock
  const before = (await gw.store.ledger.balance(gw.accountId)).balance;

  const { response } = await chat().withResponse();
  await gw.gateway.requestFinished(response.headers.get('x-request-id')!); // its history row is queued too

  const refusedChat = await chat().catch((e: unknown) => e);
  t.type(refusedChat, OpenAI.APIError);
  const c = refusedChat as InstanceType<typeof OpenAI.APIError>;
  t.match(c, { status: 503, code: 'billing_unavailable', message: /cannot record charges.*Nothing was charged/ });
  t.equal(c.headers?.get('retry-after'), '5');

  const refusedMessages = await anthropic().messages
    .create({ model: 'test/claude', max_tokens: 20, messages: [{ role: 'user', content: 'Hi' }] })
    .catch((e: unknown) => e);
  t.type(refusedMessages, Anthropic.APIError);
  const m = refusedMessages as InstanceType<typeof Anthropic.APIError>;
  t.match(m, { status: 503, error: { type: 'error', error: { type: 'overloaded_error', message: /cannot record charges/ } } });
  t.equal(m.headers?.get('retry-after'), '5');
  t.equal((await gw.store.ledger.balance(gw.accountId)).held, 0, 'nothing held for the refused requests');

  lock.exec('COMMIT');
  await gw.store.flush();
  const served = await chat();
  t.equal(served.choices[0].message.content?.split(' ').length, 3, 'served again once the rows are written');

  await gw.store.flush();
  const ids = [c, m].map((e) => String(e.headers?.get('x-request-id')));
  for (const id of ids) {
    await gw.gateway.requestFinished(id);
    t.match(await gw.store.history.get(id), { status: 'error', httpStatus: 503, costNano: 0, holdNano: 0 }, 'the refusal is in the history');
  }
  t.ok((await gw.store.ledger.balance(gw.accountId)).balance < before, 'the two served requests were charged');
  t.same(await checkInvariants(gw.store, { noOpenHolds: true }), []);
});
