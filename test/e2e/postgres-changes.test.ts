// Changes reach every node at once (issue 16, item 3): two gateways on one PostgreSQL database; a
// key revoked, a routing setting changed (from the command line) or credit granted on one is
// honoured by the other on its next request once the change is announced, within a second.
import t, { type Test } from 'tap';
import { startGateway as startNode, type Gateway } from '../../lib/gateway.js';
import { silentLogger } from '../../lib/log.js';
import { openStore } from '../../lib/store/index.js';
import type { PostgresStore } from '../../lib/store/postgres/store.js';
import { DISCARD, startGateway, type TestGateway } from '../helpers/gateway.js';
import { checkInvariants } from '../helpers/invariants.js';
import { freshPostgresUrl, postgresSkip } from '../helpers/postgres.js';
import { postChat } from '../helpers/post-chat.js';
import { openSql, type Sql } from '../helpers/sql.js';
import { until } from '../helpers/until.js';

const skip = await postgresSkip();
const chat = { model: 'test/gpt', max_tokens: 20, messages: [{ role: 'user', content: 'Hi <<sim words=3>>' }] };

const post = (url: string, key: string) => postChat(url, key, chat);

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];

interface Nodes {
  a: TestGateway;
  b: Gateway;
  bStore: PostgresStore;
  db: Sql;
  /** Wait until B has heard every change committed so far (its counter is the database's). */
  settled(): Promise<void>;
  /**
   * Make `change` and wait until B's change version moves: the milliseconds from the change's
   * return to B hearing it (`afterReturn`; 0 when B had heard it already), and from its call (an
   * upper bound of commit to hearing: it includes the change's own round trips).
   */
  heard(change: () => Promise<unknown>): Promise<{ afterReturn: number; afterCall: number }>;
}

/** Node A (the test gateway, where changes are made) and node B (as `gateway serve` starts one: listening). */
async function twoNodes(t: Test, creditUsd = 10): Promise<Nodes> {
  const url = await freshPostgresUrl();
  const a = await startGateway({ creditUsd, configure: (c) => void (c.storage = { postgres: url, commit_interval_ms: 2 }) });
  t.teardown(() => a.close());
  const b = await startNode(a.config, { log: silentLogger, requestLog: DISCARD });
  t.teardown(() => b.close());
  const bStore = b.store as PostgresStore;
  const db = await openSql(url);
  t.teardown(() => db.close());
  return {
    a, b, bStore, db,
    async settled() {
      const n = Number(await db.value('SELECT n FROM change_counter'));
      const start = performance.now();
      while (bStore.changes.seen !== n) { // sync() as requests call it: polls if B is not listening
        if (performance.now() - start > 10_000) throw new Error('B has not seen every change within 10 s');
        await bStore.sync();
        await new Promise((r) => setImmediate(r));
      }
    },
    async heard(change) {
      const before = bStore.changeVersion();
      const called = performance.now();
      await change();
      // B's requests call sync() (which polls when B is not listening): so does this wait.
      const afterReturn = await until('B heard the change', () => (void Promise.resolve(bStore.sync()).catch(() => {}), bStore.changeVersion() !== before), 1000);
      return { afterReturn, afterCall: performance.now() - called };
    },
  };
}

t.test('20 keys revoked on node A: node B hears each within a second and refuses the key on its next request', { skip }, async (t) => {
  const { a, b, settled, heard } = await twoNodes(t);
  const delays: number[] = [];
  const bounds: number[] = [];
  for (let i = 0; i < 20; i++) {
    const { key, secret } = await a.store.keys.create({ accountId: a.accountId, name: `key ${i}` });
    t.equal((await post(b.url, secret)).status, 200, 'B serves the key (and caches it)');
    await settled();
    const { afterReturn, afterCall } = await heard(() => a.store.keys.revoke(key.id));
    delays.push(afterReturn);
    bounds.push(afterCall);
    const refused = await post(b.url, secret);
    t.equal(refused.status, 401, 'the next request on B is refused');
    t.match(refused.json, { error: { code: 'invalid_api_key', message: /revoked/ } });
  }
  const ms = (xs: number[]) => `p50 ${quantile(xs, 0.5).toFixed(2)} ms, max ${Math.max(...xs).toFixed(2)} ms`;
  t.ok(Math.max(...bounds) <= 1000, `every revocation heard on B within a second: after the revoke call's return on A ${ms(delays)}; ` +
    `after its call ${ms(bounds)}`);
  await a.store.flush();
  await b.store.flush();
  t.same(await checkInvariants(a.store, { noOpenHolds: true }), []);
});

t.test('a routing change from the command line: node B honours it within a second, and its undoing', { skip }, async (t) => {
  const { a, b, settled, heard } = await twoNodes(t);
  t.equal((await post(b.url, a.apiKey)).status, 200);
  const cli = openStore(a.config); // as `gateway routing set` opens it: no listener
  t.teardown(() => cli.close());
  await settled();
  const { afterCall } = await heard(() => cli.routing.set(a.accountId, { deny: ['test/gpt'] }));
  t.ok(afterCall <= 1000, `heard on B within a second (${afterCall.toFixed(2)} ms after the call)`);
  const denied = await post(b.url, a.apiKey);
  t.equal(denied.status, 403, 'B\'s next request is refused');
  t.match(denied.json, { error: { message: /test\/gpt/ } }, 'the model is refused on B');
  await settled();
  await heard(() => cli.routing.set(a.accountId, { deny: [] }));
  t.equal((await post(b.url, a.apiKey)).status, 200, 'served again once undone');
});

t.test('credit granted on node A: node B admits on its next request (admission reads the balance in the database)', { skip }, async (t) => {
  const { a, b } = await twoNodes(t, 0);
  const refused = await post(b.url, a.apiKey);
  t.equal(refused.status, 402, 'no credit yet');
  await a.store.ledger.grant(a.accountId, 1_000_000_000, 'granted on A');
  const admitted = await post(b.url, a.apiKey);
  t.equal(admitted.status, 200, 'the very next request on B is admitted, with no announcement needed');
});
