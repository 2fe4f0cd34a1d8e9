// bin/gateway as an operator runs it: config check, serve with the demo account, SIGHUP reload,
// SIGTERM drain of an in-flight stream.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import http from 'node:http';
import { childEnv, gatewayBin as bin, serveProcess as serve, writeDemoConfig } from '../helpers/process.js';

const dir = mkdtempSync(join(tmpdir(), 'gw-proc-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

function writeConfig(name: string, mutate?: (c: Record<string, any>) => void): string {
  return writeDemoConfig(dir, 'demo@example.com', 5, (c) => {
    c.server.shutdown_grace_ms = 5000;
    mutate?.(c);
  }, name);
}

t.test('config check names every error by path', async (t) => {
  const bad = join(dir, 'bad.yaml');
  writeFileSync(
    bad,
    readFileSync(join(import.meta.dirname, '../../config/gateway.yaml'), 'utf8')
      .replace('format: chat', 'format: grpc')
      .replace('price: { input: 3, output: 15', 'price: { input: -3, output: 15'),
  );
  const r = spawnSync(process.execPath, [bin, 'config', 'check', '--config', bad, '--json'], { encoding: 'utf8', env: childEnv() });
  t.equal(r.status, 1);
  const out = JSON.parse(r.stdout);
  t.equal(out.ok, false);
  t.ok(out.errors.some((e: string) => e.startsWith('providers[1].format')), out.errors.join('\n'));
  t.ok(out.errors.some((e: string) => e.startsWith('offers[0].price.input')), out.errors.join('\n'));
  const good = spawnSync(process.execPath, [bin, 'config', 'check', '--config', join(import.meta.dirname, '../../config/gateway.yaml')], { encoding: 'utf8', env: childEnv() });
  t.equal(good.status, 0, good.stderr);
  t.match(good.stdout, /OK/);
});

function post(url: string, key: string, body: object): Promise<{ status: number; text: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url + '/v1/chat/completions', { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, text, headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** Open a stream and resolve once its headers arrived (so it is surely in flight). */
function startStream(url: string, key: string, body: object) {
  return new Promise<{ headers: { status: number }; rest: Promise<string> }>((resolve, reject) => {
    const req = http.request(url + '/v1/chat/completions', { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (res) => {
      const rest = new Promise<string>((done, fail) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => done(text));
        res.on('error', fail);
      });
      resolve({ headers: { status: res.statusCode! }, rest });
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

t.test('serve: demo key works; SIGHUP reloads; SIGTERM lets a stream finish', async (t) => {
  const file = writeConfig('gw.json');
  const { child, url, key, logLine, logSize } = await serve(file, { expectDemoKey: true });
  t.teardown(() => child.kill('SIGKILL'));
  t.ok(key, 'a demo key is printed on first run');
  const ok = await post(url, key!, { model: 'test/gpt', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 });
  t.equal(ok.status, 200, ok.text);

  // The command line changes keys while the server runs: the very next request sees it.
  const cli = (...args: string[]) => spawnSync(process.execPath, [bin, ...args, '--config', file, '--json'], { encoding: 'utf8', env: childEnv() });
  const created = JSON.parse(cli('keys', 'create', '--account', 'demo@example.com', '--name', 'second').stdout);
  const hi = { model: 'test/gpt', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 };
  t.equal((await post(url, created.secret, hi)).status, 200, 'a key made by the command line works at once');
  t.equal(cli('keys', 'revoke', String(created.key.id)).status, 0);
  const refused = await post(url, created.secret, hi);
  t.equal(refused.status, 401, 'and once revoked there, the next request is refused');
  t.match(refused.text, /revoked/);

  // Reload with a new model: new requests see it.
  writeConfig('gw.json', (c) => {
    c.models.push({ id: 'test/new', context_window: 1000, max_output_tokens: 100 });
    c.offers.push({ listing: 'test/new@sim-chat', model: 'test/new', provider: 'sim-chat', upstream_model: 'new-up', price: { input: 1, output: 1 } });
  });
  const before = await post(url, key!, { model: 'test/new', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(before.status, 404);
  const reloaded = logLine(/config reloaded/, logSize());
  child.kill('SIGHUP');
  await reloaded;
  const after = await post(url, key!, { model: 'test/new', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(after.status, 200, 'the reloaded config serves the new model');

  // An in-flight stream of ~1.5 s survives SIGTERM; the process then exits 0.
  const { headers, rest } = await startStream(url, key!, { model: 'test/gpt', stream: true, messages: [{ role: 'user', content: 'x <<sim words=30 delay_ms=50>>' }] });
  t.equal(headers.status, 200);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  const text = await rest;
  t.match(text, /data: \[DONE\]/, 'the stream finished');
  t.equal(await exited, 0);

  // The demo account is made once: a second start prints no new key.
  const again = await serve(file);
  t.equal(again.key, null);
  // Wait for its shutdown (last batch, WAL checkpoint) before the teardown removes the directory.
  const againExited = new Promise((resolve) => again.child.once('exit', resolve));
  again.child.kill('SIGTERM');
  await againExited;
});
