// The dashboard on PostgreSQL nodes: a page asked while the database is away is a 503 with
// Retry-After (not a 500), and is served again once it is back.
import t from 'tap';
import { startGateway } from '../helpers/gateway.js';
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
