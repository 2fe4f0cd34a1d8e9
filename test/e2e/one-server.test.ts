// One serving process per database: a second `serve` on the same file refuses to start, naming the
// holder's pid and the file; the command line works beside the server; a SIGKILLed server leaves no
// lock behind. The files are readable by their owner only.
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { childEnv, gatewayBin, serveProcess, writeDemoConfig } from '../helpers/process.js';

const dir = mkdtempSync(join(tmpdir(), 'gw-one-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const cli = (file: string, ...argv: string[]) => spawnSync(process.execPath, [gatewayBin, ...argv, '--config', file], { env: childEnv(), encoding: 'utf8' });

t.test('a second serve on the same database refuses; the CLI works beside the server; SIGKILL frees the file', async (t) => {
  const db = join(dir, 'gw.db');
  const file = writeDemoConfig(dir, 'one@example.com', 1);

  const first = await serveProcess(file, { expectDemoKey: true });
  t.teardown(() => first.child.kill('SIGKILL'));

  const modes = Object.fromEntries(['', '-wal', '-shm', '.lock'].map((s) => [`gw.db${s}`, (statSync(db + s, { throwIfNoEntry: false })?.mode ?? 0) & 0o777]));
  t.same(modes, { 'gw.db': 0o600, 'gw.db-wal': 0o600, 'gw.db-shm': 0o600, 'gw.db.lock': 0o600 }, 'the database, its WAL and SHM, and the lock are mode 0600');

  const second = spawn(process.execPath, [gatewayBin, 'serve', '--config', file], { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv() });
  let err = '';
  second.stderr!.on('data', (c) => (err += c));
  t.teardown(() => second.kill('SIGKILL'));
  // Either it exits, or (the bug) it serves beside the first.
  const code = await new Promise<number | string>((resolve) => {
    second.once('exit', (c) => resolve(c ?? 'signal'));
    second.stderr!.on('data', () => /gateway listening/.test(err) && resolve('listening'));
  });
  t.not(code, 'listening', 'the second serve does not start');
  t.not(code, 0, 'the second serve exits non-zero');
  const lines = err.trim().split('\n');
  t.equal(lines.length, 1, `one line: ${err}`);
  t.match(lines[0], `pid ${first.child.pid}`);
  t.match(lines[0], db);

  const grant = cli(file, 'credits', 'grant', '--account', 'one@example.com', '--amount', '2');
  t.equal(grant.status, 0, grant.stderr);
  const created = cli(file, 'accounts', 'create', '--email', 'beside@example.com');
  t.equal(created.status, 0, created.stderr);

  first.child.kill('SIGKILL');
  await once(first.child, 'exit');
  const third = await serveProcess(file);
  t.teardown(() => third.child.kill('SIGKILL'));
  t.match(third.url, /^http:\/\/127\.0\.0\.1:\d+$/, 'a new serve starts after the holder was killed');
  const shown = cli(file, 'credits', 'show', '--account', 'one@example.com', '--json');
  t.equal(shown.status, 0, shown.stderr);
});
