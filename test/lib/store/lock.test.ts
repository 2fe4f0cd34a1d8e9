// The serving store's lock on `<db>.lock`, within one process (other processes: test/e2e/one-server).
import t from 'tap';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseInUseError } from '../../../lib/store/index.js';
import { openSqliteStore } from '../../../lib/store/sqlite/store.js';
import net, { type AddressInfo } from 'node:net';
import { startGateway } from '../../../lib/gateway.js';
import { silentLogger } from '../../../lib/log.js';
import { buildTestConfig } from '../../helpers/gateway.js';

const dir = mkdtempSync(join(tmpdir(), 'gw-lock-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const open = (path: string, exclusive: boolean) => openSqliteStore({ path, commitIntervalMs: 5, clock: Date.now, backgroundWriter: false, exclusive });

t.test('an exclusive store refuses a second exclusive open until closed; plain opens work beside it', async (t) => {
  const path = join(dir, 'a.db');
  const server = open(path, true);
  t.throws(() => open(path, true), new DatabaseInUseError(path, `${path}.lock`, process.pid));
  const cli = open(path, false);
  await cli.accounts.create({ email: 'beside@example.com' });
  await cli.close();
  t.throws(() => open(path, true), DatabaseInUseError, 'still held after the plain store closed');
  await server.close();
  const next = open(path, true);
  t.ok(await next.accounts.byEmail('beside@example.com'), 'the next server opens the same file');
  await next.close();
});

t.test('a symlink to the database finds the same lock', async (t) => {
  const path = join(dir, 'b.db');
  const server = open(path, true);
  symlinkSync(path, join(dir, 'alias.db'));
  t.throws(() => open(join(dir, 'alias.db'), true), DatabaseInUseError);
  await server.close();
});

t.test('a gateway whose start fails after opening its store lets go of the database', async (t) => {
  const busy = net.createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  t.teardown(() => busy.close());
  const port = (busy.address() as AddressInfo).port;
  const config = buildTestConfig(mkdtempSync(join(dir, 'gw-')), (c) => (c.server.port = port));
  await t.rejects(startGateway(config, { log: silentLogger }), { code: 'EADDRINUSE' }, 'the port is taken');
  const gw = await startGateway({ ...config, server: { ...config.server, port: 0 } }, { log: silentLogger });
  t.ok(gw.url, 'the next start on the same database is not refused');
  await gw.close();
});
