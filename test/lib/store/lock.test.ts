// The serving store's lock on `<db>.lock`, within one process (other processes: test/e2e/one-server).
import t from 'tap';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseInUseError } from '../../../lib/store/index.js';
import { openSqliteStore } from '../../../lib/store/sqlite/store.js';

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
