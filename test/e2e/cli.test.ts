// bin/gateway as an operator runs it: one-line errors for a port in use, the simulator's default
// port, the password rule, set-password and reset-link (SQLite and PostgreSQL), and what a restart says of the demo key.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { childEnv, gateway, gatewayBin as bin, serveProcess, writeDemoConfig } from '../helpers/process.js';
import { testConfigObject } from '../helpers/gateway.js';
import { until } from '../helpers/until.js';
import { freshPostgresUrl, postgresSkip } from '../helpers/postgres.js';
import { tempDir } from '../lib/store/fixtures/store.js';
import { loadConfig } from '../../lib/config.js';
import { openStore } from '../../lib/store/index.js';

/** A TCP server holding `port` (0: any) on 127.0.0.1, closed at teardown. */
async function occupy(t: Test, port = 0): Promise<number> {
  const server = net.createServer();
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as net.AddressInfo).port;
}

/** One line on stderr, no stack trace. */
function oneLine(t: Test, err: string, re: RegExp) {
  t.match(err, re);
  t.equal(err.trim().split('\n').length, 1, `one line: ${err}`);
  t.notMatch(err, /\n\s+at /, 'no stack trace');
}

t.test('a port in use: one line naming the port and what to change, exit 1 (gateway, metrics, simulator)', async (t) => {
  const port = await occupy(t);
  const dir = tempDir(t);
  const file = writeDemoConfig(dir, 'demo@example.com', 5, (c) => (c.server.port = port));
  const served = gateway('serve', '--config', file);
  t.equal(served.code, 1);
  oneLine(t, served.err, new RegExp(`^error: port ${port} on 127\\.0\\.0\\.1 is in use by another process: change server\\.port in ${file.replace(/[.]/g, '\\.')}\\n$`));

  const metrics = gateway('serve', '--config', writeDemoConfig(dir, 'demo@example.com', 5, (c) => (c.metrics = { host: '127.0.0.1', port }), 'metrics.json'));
  t.equal(metrics.code, 1);
  oneLine(t, metrics.err, new RegExp(`^error: port ${port} on 127\\.0\\.0\\.1 is in use by another process: change metrics\\.port in .*metrics\\.json\\n$`));

  const sim = gateway('simulate', '--port', String(port));
  t.equal(sim.code, 1);
  oneLine(t, sim.err, new RegExp(`^error: port ${port} on 127\\.0\\.0\\.1 is in use by another process: choose another with --port N`));

  // The failed start made no demo key it could not print: the next start prints one.
  const again = await serveProcess(writeDemoConfig(dir, 'demo@example.com', 5, undefined, 'free.json'));
  t.teardown(() => void again.child.kill('SIGKILL'));
  await until('the demo key printed', () => /sk-service-\w+/.test(again.output()), 10_000);
});

t.test('simulate without --port listens on the documented default, 9090', async (t) => {
  t.match(gateway('simulate', '--help').out, /--port N +the port to listen on \(0: any free port\) \(default 9090\)/);
  // Held here (or by someone else): either way the simulator must try 9090 and say so.
  await occupy(t, 9090).catch(() => undefined);
  const r = gateway('simulate');
  t.equal(r.code, 1);
  oneLine(t, r.err, /^error: port 9090 on 127\.0\.0\.1 is in use/);
});

t.test('simulate --port 0 serves both formats until SIGTERM', async (t) => {
  const child = spawn(process.execPath, [bin, 'simulate', '--port', '0', '--api-key', 'k'], { env: childEnv(), stdio: ['ignore', 'pipe', 'inherit'] });
  const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
  const url = chunk.toString().trim();
  t.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const res = await fetch(url + '/v1/models', { headers: { authorization: 'Bearer k' } });
  t.equal(res.status, 200);
  child.kill('SIGTERM');
  t.same(await once(child, 'exit'), [0, null]);
});

/** A config file on SQLite, or on a fresh PostgreSQL schema. */
async function storeConfigFile(t: Test, backend: 'sqlite' | 'postgres'): Promise<string> {
  const dir = tempDir(t);
  const cfg = testConfigObject(join(dir, 'gw.db'));
  if (backend === 'postgres') cfg.storage = { postgres: await freshPostgresUrl() };
  const file = join(dir, 'gw.json');
  writeFileSync(file, JSON.stringify(cfg));
  return file;
}

t.test('accounts create --password follows the dashboard rule (8 characters)', async (t) => {
  const file = await storeConfigFile(t, 'sqlite');
  const short = gateway('accounts', 'create', '--email', 'a@example.com', '--password', 'pw', '--config', file);
  t.equal(short.code, 1);
  oneLine(t, short.err, /^error: --password: a password needs at least 8 characters \(the dashboard's rule\)\n$/);
  t.match(gateway('credits', 'show', '--account', 'a@example.com', '--config', file), { code: 1, err: /no account/ }, 'nothing was created');
  t.match(gateway('accounts', 'create', '--email', 'a@example.com', '--password', 'eight888', '--config', file), { code: 0 });
});

for (const backend of ['sqlite', 'postgres'] as const) {
  t.test(`accounts set-password: the new password logs in, the old does not, its sessions end [${backend}]`, async (t) => {
    if (backend === 'postgres') {
      const skip = await postgresSkip();
      if (skip) return void t.plan(0, skip);
    }
    const file = await storeConfigFile(t, backend);
    t.match(gateway('accounts', 'create', '--email', 'ops@example.com', '--password', 'old-password', '--config', file), { code: 0 });
    t.match(gateway('accounts', 'create', '--email', 'other@example.com', '--password', 'other-password', '--config', file), { code: 0 });
    const store = openStore(loadConfig(file)); // the running server's view
    t.teardown(() => store.close());
    await store.sync();
    const ops = (await store.accounts.byEmail('ops@example.com'))!;
    const other = (await store.accounts.byEmail('other@example.com'))!;
    const sessions = [await store.sessions.create(ops.id, 3_600_000), await store.sessions.create(ops.id, 3_600_000)];
    const bystander = await store.sessions.create(other.id, 3_600_000);

    t.match(gateway('accounts', 'set-password', '--email', 'ops@example.com', '--password', 'short', '--config', file),
      { code: 1, err: /at least 8 characters/ });
    t.ok(await store.sessions.get(sessions[0].token), 'a refused password ends nothing');
    t.match(gateway('accounts', 'set-password', '--email', 'nobody@example.com', '--password', 'new-password', '--config', file),
      { code: 1, err: /no account with email nobody@example\.com/ });

    const r = gateway('accounts', 'set-password', '--email', 'ops@example.com', '--password', 'new-password', '--config', file, '--json');
    t.equal(r.code, 0, r.err);
    t.match(JSON.parse(r.out), { email: 'ops@example.com', sessionsEnded: 2 });
    for (const s of sessions) t.equal(await store.sessions.get(s.token), null, 'its sessions ended');
    t.ok(await store.sessions.get(bystander.token), 'another account\'s session stays');
    t.equal((await store.accounts.checkPassword('ops@example.com', 'new-password'))?.id, ops.id);
    t.equal(await store.accounts.checkPassword('ops@example.com', 'old-password'), null);
  });
}

for (const backend of ['sqlite', 'postgres'] as const) {
  t.test(`accounts reset-link: a one-time link to the reset page, the newest one working, once [${backend}]`, async (t) => {
    if (backend === 'postgres') {
      const skip = await postgresSkip();
      if (skip) return void t.plan(0, skip);
    }
    const file = await storeConfigFile(t, backend);
    t.match(gateway('accounts', 'create', '--email', 'forgot@example.com', '--password', 'old-password', '--config', file), { code: 0 });
    t.match(gateway('accounts', 'reset-link', '--email', 'nobody@example.com', '--config', file), { code: 1, err: /no account with email nobody@example\.com/ });
    t.match(gateway('accounts', 'reset-link', '--email', 'forgot@example.com', '--base-url', 'example.com', '--config', file),
      { code: 1, err: /--base-url: "example\.com" is not an http\(s\) address/ });

    const path = gateway('accounts', 'reset-link', '--email', 'forgot@example.com', '--config', file);
    t.equal(path.code, 0, path.err);
    const first = /^\/dashboard\/reset\?token=([A-Za-z0-9_-]{43})$/m.exec(path.out);
    t.ok(first, `without a base address, the link's path: ${path.out}`);
    const r = gateway('accounts', 'reset-link', '--email', 'forgot@example.com', '--base-url', 'https://gw.example.com/', '--config', file, '--json');
    t.equal(r.code, 0, r.err);
    const out = JSON.parse(r.out);
    t.match(out, { email: 'forgot@example.com', link: /^https:\/\/gw\.example\.com\/dashboard\/reset\?token=[A-Za-z0-9_-]{43}$/ });
    t.ok(Date.parse(out.expiresAt) - Date.now() > 59 * 60_000 && Date.parse(out.expiresAt) - Date.now() <= 3_600_000, 'valid for an hour');

    const store = openStore(loadConfig(file)); // the running server's view
    t.teardown(() => store.close());
    await store.sync();
    const account = (await store.accounts.byEmail('forgot@example.com'))!;
    const token = new URL(out.link).searchParams.get('token')!;
    t.equal(await store.passwordResets.consume(first![1]), null, 'the newer link replaced the first');
    t.equal(await store.passwordResets.consume(token), account.id, 'the link works');
    t.equal(await store.passwordResets.consume(token), null, 'once');
  });
}

t.test('a restart says the demo account exists and how to make another key', async (t) => {
  const dir = tempDir(t);
  const file = writeDemoConfig(dir, 'demo@example.com', 5);
  const first = await serveProcess(file, { expectDemoKey: true });
  first.child.kill('SIGTERM');
  await once(first.child, 'exit');
  t.notMatch(first.output(), /exists already/);

  const second = await serveProcess(file);
  t.teardown(() => void second.child.kill('SIGKILL'));
  await until('the restart lines', () => /A new dashboard password.*\n/.test(second.output()), 10_000);
  t.equal(second.key, null, 'no key printed again');
  t.match(second.output(), `Demo account demo@example.com exists already; its API key was printed on the first start only.\n` +
    `Another key: gateway keys create --account demo@example.com --name NAME --config ${file}\n` +
    `A new dashboard password: gateway accounts set-password --email demo@example.com --password P --config ${file}\n`);
});

