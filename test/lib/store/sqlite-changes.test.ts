import t from 'tap';
import { join } from 'node:path';
import { openDatabase } from '../../../lib/store/sqlite/open.js';
import { ChangeWatcher } from '../../../lib/store/sqlite/changes.js';
import { tempDir } from './fixtures/store.js';

t.test('a foreign read that fails is tried again at the next check, not skipped', (t) => {
  const path = join(tempDir(t), 'gateway.db');
  const ours = openDatabase(path);
  const theirs = openDatabase(path);
  t.teardown(() => {
    ours.close();
    theirs.close();
  });
  const changes = new ChangeWatcher(ours);
  let reads = 0;
  let failNext = true;
  changes.setForeignHandler(() => {
    reads++;
    if (failNext) {
      failNext = false;
      throw new Error('SQLITE_BUSY (simulated)');
    }
  });
  const before = changes.version;
  theirs.prepare("INSERT INTO accounts (email, created_at) VALUES ('other@example.com', 0)").run();
  t.throws(() => changes.check(), /SQLITE_BUSY/, 'the read fails');
  t.equal(changes.check(), before + 1, 'the next check reads the change (the counter moved)');
  t.equal(reads, 2, 'the foreign rows were read again');
  t.equal(changes.check(), before + 1, 'and once only');
  t.equal(reads, 2);
  t.end();
});
