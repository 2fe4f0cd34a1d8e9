import t from 'tap';
import Database from 'better-sqlite3';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../../lib/store/index.js';
import { migrationsDir } from '../../../lib/store/sqlite/open.js';
import { openSqliteStore } from '../../../lib/store/sqlite/store.js';
import { storeConfig, tempDir } from './fixtures/store.js';

t.test('migrations apply once, in order, from the package folder', async (t) => {
  const dbPath = join(tempDir(t), 'nested', 'dir', 'gateway.db');
  const files = readdirSync(migrationsDir).filter((f) => f.endsWith('.sql')).sort();
  t.ok(files.length >= 1 && files[0].startsWith('001_'));

  await openStore(storeConfig(dbPath)).close();
  const db = new Database(dbPath, { readonly: true });
  const applied = db.prepare('SELECT name, applied_at FROM schema_migrations ORDER BY name').all() as any[];
  t.same(applied.map((r) => r.name), files, 'every migration recorded, parent folders created');
  const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).pluck().all();
  for (const name of ['accounts', 'api_keys', 'routing_settings', 'journal', 'balances', 'key_spend', 'holds', 'payments', 'request_history']) {
    t.ok(tables.includes(name), `table ${name}`);
  }
  t.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  db.close();

  await openStore(storeConfig(dbPath)).close();
  const again = new Database(dbPath, { readonly: true });
  t.same(again.prepare('SELECT name, applied_at FROM schema_migrations ORDER BY name').all(), applied, 'not applied twice');
  again.close();
});

t.test('the journal refuses entries that break the money rules', async (t) => {
  const dbPath = join(tempDir(t), 'gateway.db');
  await openStore(storeConfig(dbPath)).close();
  const db = new Database(dbPath);
  t.teardown(() => db.close());
  db.prepare(`INSERT INTO accounts (email, created_at) VALUES ('a@b.c', 0)`).run();
  const entry = (kind: string, amount: number) =>
    db.prepare('INSERT INTO journal (account_id, kind, amount, created_at) VALUES (1, ?, ?, 0)').run(kind, amount);
  t.throws(() => entry('grant', -5), /CHECK/, 'a negative grant');
  t.throws(() => entry('charge', -5), /CHECK/, 'a charge without a hold');
  t.throws(() => entry('topup', 5), /CHECK/, 'a top-up without a payment');
  db.prepare(`INSERT INTO payments (account_id, provider_ref, amount, status, created_at, updated_at) VALUES (1, 'pi_1', 5, 'confirmed', 0, 0)`).run();
  db.prepare(`INSERT INTO journal (account_id, kind, amount, payment_id, created_at) VALUES (1, 'topup', 5, 1, 0)`).run();
  t.throws(() => db.prepare(`INSERT INTO journal (account_id, kind, amount, payment_id, created_at) VALUES (1, 'topup', 5, 1, 0)`).run(),
    /UNIQUE/, 'a second credit for one payment');
  t.throws(() => db.prepare(`INSERT INTO payments (account_id, provider_ref, amount, status, created_at, updated_at) VALUES (1, 'pi_1', 5, 'pending', 0, 0)`).run(),
    /UNIQUE/, 'one row per provider payment');
});

t.test('background checkpoints: the serving connection never checkpoints itself; a worker does', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-ckpt-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'gw.db');
  const store = openSqliteStore({ path: file, commitIntervalMs: 1, clock: Date.now, backgroundWriter: true });
  const account = await store.accounts.create({ email: 'ckpt@example.com' });
  for (let i = 0; i < 50; i++) await store.ledger.grant(account.id, 1_000_000, `g${i}`);
  // Until a checkpoint, every page (migrations included) sits in the WAL and the database file stays
  // tiny: 50 small commits are far below SQLite's own 1000-page trigger, so only the worker grows it.
  const before = statSync(file).size;
  let after = before;
  for (let i = 0; i < 40 && after <= before; i++) {
    await new Promise((r) => setTimeout(r, 100)); // waiting for a 1 s timer in another thread
    after = statSync(file).size;
  }
  t.ok(after > before, `the worker checkpointed the WAL into the file (${before} → ${after} bytes)`);
  await store.close();
});
