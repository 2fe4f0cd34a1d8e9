// /healthz and /readyz: no key, cheap, and /readyz turns 503 with its reason while the store cannot
// write, and at once on SIGTERM (while requests drain, so a load balancer moves traffic away).
import t from 'tap';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startGateway } from '../helpers/gateway.js';
import { postChat } from '../helpers/post-chat.js';
import { serveProcess, writeDemoConfig } from '../helpers/process.js';
import { get } from '../helpers/prometheus.js';
import { freshPostgresUrl, postgresSkip } from '../helpers/postgres.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

const pgSkip = await postgresSkip();

/** Poll /readyz until it answers `status` (the heartbeat notices the database within a second or so). */
async function readyzBecomes(url: string, status: number, withinMs: number) {
  const deadline = performance.now() + withinMs;
  for (;;) {
    const r = await get(`${url}/readyz`);
    if (r.status === status) return r;
    if (performance.now() > deadline) throw new Error(`/readyz still ${r.status} (${r.text}) after ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

t.test('/healthz and /readyz answer 200 without a key, in a small JSON body', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  const health = await get(`${gw.url}/healthz`);
  t.equal(health.status, 200);
  t.same(JSON.parse(health.text), { status: 'ok' });
  const ready = await get(`${gw.url}/readyz`);
  t.equal(ready.status, 200);
  t.same(JSON.parse(ready.text), { status: 'ready' });
  t.equal(ready.headers['cache-control'], 'no-store');
});

t.test('/readyz is 503 while the store cannot write its backlog, 200 again once written; /healthz stays 200', async (t) => {
  // One served request queues 4 rows (see store-backlog.test.ts): the bound is reached with one.
  const gw = await startGateway({ maxUnwrittenRows: 4 });
  t.teardown(() => gw.close());
  const lock = new Database(gw.dbPath);
  t.teardown(() => lock.close());
  lock.exec('BEGIN IMMEDIATE'); // the store's writer waits for this lock

  const r = await postChat(gw.url, gw.apiKey, { model: 'test/gpt', max_tokens: 20, messages: [{ role: 'user', content: 'Hi <<sim words=3>>' }] });
  t.equal(r.status, 200);
  await gw.gateway.requestFinished(r.requestId);
  const stalled = await get(`${gw.url}/readyz`);
  t.equal(stalled.status, 503);
  t.match(JSON.parse(stalled.text), { status: 'not_ready', reason: /^store backlogged: \d+ rows wait to be written/ });
  t.equal((await get(`${gw.url}/healthz`)).status, 200, 'the process is still up');

  lock.exec('COMMIT');
  await gw.store.flush();
  t.equal((await get(`${gw.url}/readyz`)).status, 200, 'ready again once the rows are written');
});

t.test('PostgreSQL: /readyz is 503 while the database is away, even with nothing to write; 200 once it is back', { skip: pgSkip }, async (t) => {
  const proxy = await startTcpProxy({ host: '127.0.0.1', port: 5432 });
  t.teardown(() => proxy.close());
  const url = (await freshPostgresUrl()).replace(/\/\/([^@/]*@)?[^/]+\//, `//$1127.0.0.1:${proxy.port}/`);
  const gw = await startGateway({ configure: (c) => void (c.storage = { postgres: url, commit_interval_ms: 2 }) });
  t.teardown(() => gw.close());
  t.equal((await get(`${gw.url}/readyz`)).status, 200);

  proxy.cut();
  const away = await readyzBecomes(gw.url, 503, 5000);
  t.match(JSON.parse(away.text), { status: 'not_ready', reason: /^database unreachable/ });
  t.equal((await get(`${gw.url}/healthz`)).status, 200);
  proxy.restore();
  await readyzBecomes(gw.url, 200, 5000);
});

t.test('SIGTERM: /readyz turns 503 at once while a request drains, which still completes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-ready-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = writeDemoConfig(dir, 'ready@example.com', 10, (c) => (c.server.shutdown_grace_ms = 10_000));
  const gw = await serveProcess(file, { expectDemoKey: true });
  t.teardown(() => gw.child.kill('SIGKILL'));
  t.equal((await get(`${gw.url}/readyz`)).status, 200);

  // A ~2 s stream, in flight once its first bytes arrived.
  const { status } = await new Promise<{ status: Promise<number> }>((resolve, reject) => {
    const req = http.request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${gw.key}`, 'content-type': 'application/json' } }, (res) => {
      const status = new Promise<number>((done) => {
        res.on('end', () => done(res.statusCode!));
        res.on('error', () => done(-1));
      });
      res.once('data', () => resolve({ status }));
      res.resume();
    });
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'test/gpt', max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'x <<sim words=100 delay_ms=20>>' }] }));
  });

  const exited = new Promise<number | null>((resolve) => gw.child.once('exit', (code) => resolve(code)));
  const from = gw.logSize();
  gw.child.kill('SIGTERM');
  await gw.logLine(/"msg":"shutting down/, from);
  const draining = await get(`${gw.url}/readyz`);
  t.equal(draining.status, 503);
  t.same(JSON.parse(draining.text), { status: 'not_ready', reason: 'shutting down' });
  t.equal(draining.headers.connection, 'close', 'connections close after their answer while draining');
  t.equal((await get(`${gw.url}/healthz`)).status, 200, 'the process is still up');

  t.equal(await status, 200, 'the request in flight completed');
  t.equal(await exited, 0, 'the process stopped once it drained');
});
