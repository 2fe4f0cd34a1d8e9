// The gateway on storage.postgres: a request served, charged and recorded; a second node on the
// same database serving the same key and honouring a revocation made on the first; a database
// that goes away (503 with Retry-After) and comes back.
import t from 'tap';
import { startGateway as startNode } from '../../lib/gateway.js';
import { silentLogger } from '../../lib/log.js';
import { DISCARD, startGateway } from '../helpers/gateway.js';
import { checkInvariants } from '../helpers/invariants.js';
import { freshPostgresUrl, postgresSkip } from '../helpers/postgres.js';
import { postChat } from '../helpers/post-chat.js';
import { openSql } from '../helpers/sql.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

const skip = await postgresSkip();
const chat = { model: 'test/gpt', max_tokens: 100, messages: [{ role: 'user', content: 'Hi <<sim words=7>>' }] };

const post = postChat;

const onPostgres = (url: string) => ({ configure: (c: Record<string, any>) => void (c.storage = { postgres: url, commit_interval_ms: 2 }) });

t.test('a gateway on storage.postgres serves a chat request, charges its usage and records it', { skip }, async (t) => {
  const gw = await startGateway({ creditUsd: 10, ...onPostgres(await freshPostgresUrl()) });
  t.teardown(() => gw.close());
  const r = await post(gw.url, gw.apiKey, chat);
  t.equal(r.status, 200);
  t.equal(r.json.usage.completion_tokens, 7);
  await gw.gateway.requestFinished(r.requestId);
  const row = await gw.store.history.get(r.requestId);
  t.match(row, { status: 'ok', model: 'test/gpt', httpStatus: 200, usage: { output: 7 } });
  t.ok(row!.costNano > 0 && row!.costNano <= row!.holdNano, 'charged within its hold');
  t.equal((await gw.store.ledger.balance(gw.accountId)).balance, 10_000_000_000 - row!.costNano);
  await gw.store.flush();
  const db = await openSql(gw.dbPath);
  t.teardown(() => db.close());
  t.equal(await db.value(`SELECT -amount FROM journal WHERE kind = 'charge'`), row!.costNano, 'the charge is in the journal');
  t.equal(await db.value('SELECT cost FROM request_history WHERE request_id = ?', r.requestId), row!.costNano, 'the history row in the table');
  t.same(await checkInvariants(gw.store, { noOpenHolds: true }), []);
});

t.test('a second node on the same database serves the same key, and refuses it within a second of its revocation on the first', { skip }, async (t) => {
  const gw = await startGateway({ creditUsd: 10, ...onPostgres(await freshPostgresUrl()) });
  t.teardown(() => gw.close());
  // A second node as `gateway serve` starts one: its own store and pool, listening for changes.
  const other = await startNode(gw.config, { log: silentLogger, requestLog: DISCARD });
  t.teardown(() => other.close());
  const served = await post(other.url, gw.apiKey, chat);
  t.equal(served.status, 200, 'the other node serves the key');
  const first = await post(gw.url, gw.apiKey, chat);
  t.equal(first.status, 200);

  await gw.store.keys.revoke(gw.keyId);
  const revoked = Date.now();
  let refused;
  do refused = await post(other.url, gw.apiKey, chat);
  while (refused.status === 200 && Date.now() - revoked < 2000);
  t.equal(refused.status, 401, 'refused on the other node');
  t.ok(Date.now() - revoked < 1000, `within a second (${Date.now() - revoked} ms)`);
  t.match(refused.json, { error: { code: 'invalid_api_key' } });
  await gw.store.flush();
  await other.store.flush();
  t.same(await checkInvariants(gw.store, { noOpenHolds: true }), [], 'both nodes\' charges, each once');
});

t.test('the database going away: 503 with Retry-After in the client\'s format, nothing crashes; served again once it is back', { skip }, async (t) => {
  const proxy = await startTcpProxy({ host: '127.0.0.1', port: 5432 });
  t.teardown(() => proxy.close());
  const url = (await freshPostgresUrl()).replace(/\/\/([^@/]*@)?[^/]+\//, `//$1127.0.0.1:${proxy.port}/`);
  const gw = await startGateway({ creditUsd: 10, ...onPostgres(url) });
  t.teardown(() => gw.close());
  t.equal((await post(gw.url, gw.apiKey, chat)).status, 200);

  proxy.cut();
  for (let i = 0; i < 3; i++) {
    const r = await post(gw.url, gw.apiKey, chat);
    t.equal(r.status, 503, 'refused while the database is away');
    t.ok(Number(r.headers['retry-after']) > 0, 'with Retry-After');
    t.match(r.json, { error: { type: 'service_unavailable', code: String, message: /retry/i } });
  }
  proxy.restore();
  const back = await post(gw.url, gw.apiKey, chat);
  t.equal(back.status, 200, 'served again');
  await gw.gateway.requestFinished(back.requestId);
  t.same(await checkInvariants(gw.store, { noOpenHolds: true }), []);
});
