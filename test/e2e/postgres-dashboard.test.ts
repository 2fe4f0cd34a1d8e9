// The dashboard on PostgreSQL nodes: a page asked while the database is away is a 503 with
// Retry-After (not a 500), and is served again once it is back; failed logins spread over two
// nodes are slowed down as on one (each node takes half the free failures, its waits doubled).
import t from 'tap';
import { startGateway as startNode } from '../../lib/gateway.js';
import { silentLogger } from '../../lib/log.js';
import { DashboardClient } from '../dashboard/client.js';
import { until } from '../helpers/until.js';
import { DISCARD, startGateway } from '../helpers/gateway.js';
import { freshPostgresUrl, postgresSkip } from '../helpers/postgres.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

const skip = await postgresSkip();

const onPostgres = (url: string) => ({ configure: (c: Record<string, any>) => void (c.storage = { postgres: url, commit_interval_ms: 2 }) });

t.test('GET /dashboard while the database is away: 503 with Retry-After; served again once it is back', { skip }, async (t) => {
  const proxy = await startTcpProxy({ host: '127.0.0.1', port: 5432 });
  t.teardown(() => proxy.close());
  const url = (await freshPostgresUrl()).replace(/\/\/([^@/]*@)?[^/]+\//, `//$1127.0.0.1:${proxy.port}/`);
  const gw = await startGateway({ creditUsd: 10, ...onPostgres(url) });
  t.teardown(() => gw.close());
  const page = (path: string) => fetch(gw.url + path, { redirect: 'manual' });
  t.equal((await page('/dashboard/login')).status, 200);

  proxy.cut();
  for (const path of ['/dashboard', '/dashboard/login']) {
    const r = await page(path);
    t.equal(r.status, 503, `${path} refused while the database is away`);
    t.ok(Number(r.headers.get('retry-after')) > 0, 'with Retry-After');
    t.match(await r.text(), /cannot reach its database/);
  }
  proxy.restore();
  t.equal((await page('/dashboard/login')).status, 200, 'served again');
});

t.test('failed logins alternated over two nodes: slowed after the free failures of one node, not of two', { skip }, async (t) => {
  const gw = await startGateway({ creditUsd: 10, ...onPostgres(await freshPostgresUrl()) });
  t.teardown(() => gw.close());
  const other = await startNode(gw.config, { log: silentLogger, requestLog: DISCARD });
  t.teardown(() => other.close());
  await until('both nodes counting two', () => gw.store.liveNodes?.() === 2 && other.store.liveNodes?.() === 2, 5000);
  const email = 'owner@example.com';
  await DashboardClient.signUp(gw.url, email, 'right password');
  const nodes = [new DashboardClient(gw.url), new DashboardClient(other.url)];
  for (const c of nodes) await c.get('/dashboard/login');
  // 5 free failures for an email at an address: 2 on each of the two nodes.
  for (let i = 0; i < 4; i++) {
    const r = await nodes[i % 2].post('/dashboard/login', { email, password: `wrong ${i}` });
    t.equal(r.status, 401, `failure ${i + 1}`);
  }
  const slowed = await nodes[0].post('/dashboard/login', { email, password: 'wrong again' });
  t.equal(slowed.status, 429, 'the fifth attempt waits');
  t.equal(slowed.headers.get('retry-after'), '2', 'twice one node\'s first wait');
});
