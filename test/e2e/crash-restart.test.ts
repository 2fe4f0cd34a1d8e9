// The gateway is killed (SIGKILL) under load and restarted: the database passes integrity_check,
// the money invariants hold, no hold of the dead process stays open, and no credit is lost.
import t from 'tap';
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { childEnv, gatewayBin, serveProcess, writeDemoConfig } from '../helpers/process.js';
import { checkInvariants } from '../helpers/invariants.js';

const dir = mkdtempSync(join(tmpdir(), 'gw-crash-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

function stream(url: string, key: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (res) => {
      res.on('data', () => {});
      res.on('end', () => resolve(res.statusCode!));
      res.on('error', () => resolve(-1)); // cut mid-stream
    });
    req.on('error', () => resolve(-1)); // the gateway died under us
    req.end(JSON.stringify({ model: 'test/gpt', max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'x <<sim words=100 delay_ms=20>>' }] }));
  });
}

t.test('SIGKILL under load, then restart', async (t) => {
  const db = join(dir, 'gw.db');
  const file = writeDemoConfig(dir, 'crash@example.com', 50);

  const first = await serveProcess(file, { expectDemoKey: true });
  // A grant from the command line while the server runs: it must survive the crash.
  const grant = spawnSync(process.execPath, [gatewayBin, 'credits', 'grant', '--account', 'crash@example.com', '--amount', '7.5', '--config', file], { env: childEnv(), encoding: 'utf8' });
  t.equal(grant.status, 0, grant.stderr);

  const inflight = Array.from({ length: 40 }, () => stream(first.url, first.key!));
  // Wait until requests are streaming (holds open, charges being written), then kill.
  await new Promise<void>((resolve) => {
    const probe = http.request(`${first.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${first.key}`, 'content-type': 'application/json' } }, (res) => {
      res.once('data', () => resolve()); // first bytes of a stream: the others are in flight too
    });
    probe.on('error', () => resolve());
    probe.end(JSON.stringify({ model: 'test/gpt', max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'probe <<sim words=100 delay_ms=20>>' }] }));
  });
  first.child.kill('SIGKILL');
  const statuses = await Promise.all(inflight);
  const cut = statuses.filter((s) => s === -1).length;
  t.ok(cut > 0, `${cut} of 40 streams were cut by the kill`);

  const conn = new Database(db, { readonly: true });
  t.equal(conn.pragma('integrity_check', { simple: true }), 'ok', 'integrity_check passes after the kill');
  const granted = conn.prepare(`SELECT COUNT(*) n FROM journal WHERE kind = 'grant' AND amount = 7500000000`).get() as { n: number };
  conn.close();
  t.equal(granted.n, 1, 'the grant made before the kill is there');

  // Restart on the same database: the dead process's holds are released at open.
  const second = await serveProcess(file);
  t.teardown(() => second.child.kill('SIGKILL'));
  t.same(await checkInvariants(db, { noOpenHolds: true }), [], 'invariants hold after restart, no open hold');
  second.child.kill('SIGTERM');
});
