import t from 'tap';
import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../../lib/store/index.js';
import { openSqliteStore } from '../../../lib/store/sqlite/store.js';
import { migrationsDir, openDatabase, sqliteDriverProblem } from '../../../lib/store/sqlite/open.js';
import { BATCH_SQL } from '../../../lib/store/sqlite/batch.js';
import { StoreWriter, WRITER_CACHE_KIB, WRITER_NICE, WRITER_RESOURCE_LIMITS } from '../../../lib/store/sqlite/writer.js';
import { storeConfig, tempDir, tempStore } from './fixtures/store.js';

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

/** Field `n` (1-based, as proc(5) numbers them; from 3 on, after the command's parentheses) of a /proc stat file. */
function statField(statFile: string, n: number): number {
  const stat = readFileSync(statFile, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[n - 3]);
}
/** The nice value (field 19). */
const niceIn = (statFile: string) => statField(statFile, 19);
const threadNices = () => readdirSync('/proc/self/task').map((tid) => niceIn(`/proc/self/task/${tid}/stat`));

t.test('the writer thread runs at a lower CPU priority; the event loop keeps its own', { skip: process.platform !== 'linux' && 'per-thread priorities are a Linux feature' }, async (t) => {
  const mainBefore = niceIn('/proc/self/stat');
  const atWriterNice = () => threadNices().filter((n) => n === WRITER_NICE).length;
  const before = atWriterNice();
  const { store } = tempStore(t);
  store.keys.touch(1);
  await store.flush(); // a batch went through the worker: its start-up has run
  t.equal(atWriterNice(), before + 1, 'one more thread at the writer priority');
  t.equal(niceIn('/proc/self/stat'), mainBefore, "the main thread's priority is unchanged");
});

/** The scheduling policy (field 41; SCHED_BATCH is 3). */
const policyIn = (statFile: string) => statField(statFile, 41);
const SCHED_BATCH = 3;
const hasChrt = (() => {
  try {
    execFileSync('chrt', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

t.test("the writer thread is a batch thread (SCHED_BATCH: its wake-up never preempts); the event loop keeps its policy", { skip: process.platform !== 'linux' ? 'per-thread policies are a Linux feature' : !hasChrt && 'no chrt here' }, async (t) => {
  const batchThreads = () => readdirSync('/proc/self/task').filter((tid) => policyIn(`/proc/self/task/${tid}/stat`) === SCHED_BATCH).length;
  const before = batchThreads();
  const db = openDatabase(join(tempDir(t), 'gateway.db'));
  const writer = new StoreWriter(db, 1000, (w) => t.fail(w));
  t.teardown(async () => {
    await writer.close();
    db.close();
  });
  t.equal((await writer.settings()).policy, 'batch');
  t.equal(batchThreads(), before + 1, 'one more thread with the batch policy');
  t.not(policyIn('/proc/self/stat'), SCHED_BATCH, "the main thread's policy is unchanged");
});

t.test("the writer thread's page cache and young generation are bounded (each held 16 MB or more under load)", async (t) => {
  const db = openDatabase(join(tempDir(t), 'gateway.db'));
  const writer = new StoreWriter(db, 1000, () => {});
  t.teardown(async () => {
    await writer.close();
    db.close();
  });
  const settings = await writer.settings();
  t.equal(settings.cacheKib, WRITER_CACHE_KIB, 'its connection has the small page cache, not the 16 MB better-sqlite3 builds in');
  t.ok(WRITER_CACHE_KIB <= 4096);
  t.equal(settings.resourceLimits.maxYoungGenerationSizeMb, WRITER_RESOURCE_LIMITS.maxYoungGenerationSizeMb, 'its isolate has the young-generation limit');
  t.ok(settings.resourceLimits.maxYoungGenerationSizeMb <= 8);
  t.ok(settings.resourceLimits.maxOldGenerationSizeMb >= 1024, 'and no tight old-generation limit (a backlog batch must fit)');
});

/** A database as the migrations before `prefix` (e.g. '004_') left it, nothing else. */
function databaseBefore(prefix: string, dbPath: string): Database.Database {
  const old = new Database(dbPath);
  old.pragma('journal_mode = WAL');
  old.exec('CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)');
  for (const name of readdirSync(migrationsDir).filter((f) => f < prefix && f.endsWith('.sql')).sort()) {
    old.exec(readFileSync(join(migrationsDir, name), 'utf8'));
    old.prepare('INSERT INTO schema_migrations (name, applied_at) VALUES (?, 0)').run(name);
  }
  return old;
}

/** An account, its key, a grant, a settled hold and its charge, as the migrations before 004 and 010 take them. */
const OLD_ROWS = `
  INSERT INTO accounts (id, email, created_at) VALUES (1, 'old@example.com', 0);
  INSERT INTO api_keys (id, account_id, name, prefix, hash, created_at) VALUES (7, 1, 'k', 'sk-service-ab', x'01', 0);
  INSERT INTO journal (account_id, kind, amount, note, created_at) VALUES (1, 'grant', 5000, 'welcome', 1);
  INSERT INTO holds (id, account_id, key_id, request_id, amount, status, charged, created_at, ended_at, owner_pid, owner_token)
    VALUES ('h1', 1, 7, 'req_1', 900, 'settled', 300, 2, 3, 1, 'gone');
  INSERT INTO journal (account_id, key_id, kind, amount, hold_id, created_at) VALUES (1, 7, 'charge', -300, 'h1', 3);`;

t.test('migration 004 rebuilds holds and the journal of an existing database without losing a row', async (t) => {
  const dbPath = join(tempDir(t), 'gateway.db');
  const old = databaseBefore('004_', dbPath);
  old.exec(`${OLD_ROWS}
    INSERT INTO holds (id, account_id, key_id, request_id, amount, status, charged, created_at, ended_at, owner_pid, owner_token)
      VALUES ('h2', 1, 7, 'req_2', 800, 'released', 0, 4, 5, 1, 'gone');`);
  const journalBefore = old.prepare('SELECT * FROM journal ORDER BY id').all();
  const holdsBefore = old.prepare('SELECT * FROM holds ORDER BY id').all();
  old.close();

  const store = openSqliteStore({ path: dbPath, commitIntervalMs: 1, clock: Date.now, backgroundWriter: false });
  await store.ledger.grant(1, 1000, 'after the migration');
  await store.close();

  const db = new Database(dbPath, { readonly: true });
  t.teardown(() => db.close());
  const journal = db.prepare('SELECT * FROM journal ORDER BY id').all() as { id: number; note: string | null }[];
  t.same(journal.slice(0, journalBefore.length), journalBefore, 'every journal row kept, with its id');
  t.same(journal.map((r) => r.id), [1, 2, 3], 'the next entry takes the next id');
  t.same(db.prepare('SELECT * FROM holds ORDER BY id').all(), holdsBefore, 'every hold kept');
  t.same(db.pragma('foreign_key_check'), [], 'every charge still refers to its hold');
  const schema = (name: string) => db.prepare('SELECT sql FROM sqlite_master WHERE name = ?').pluck().get(name) as string | undefined;
  t.match(schema('holds'), /WITHOUT ROWID/, 'holds: one B-tree');
  t.notMatch(schema('journal'), /AUTOINCREMENT/, 'journal: no sqlite_sequence write per entry');
  t.equal(schema('journal_key_time'), undefined, 'the unused index is gone');
  t.ok(schema('journal_account') && schema('holds_open'), 'the indexes in use are rebuilt');
  const writer = new Database(dbPath);
  t.teardown(() => writer.close());
  const charge = writer.prepare(`INSERT INTO journal (account_id, key_id, kind, amount, hold_id, created_at) VALUES (1, 7, 'charge', -1, ?, 9)`);
  t.throws(() => charge.run('h1'), /UNIQUE/, 'a hold is still charged at most once');
  writer.pragma('foreign_keys = ON');
  t.throws(() => charge.run('no-such-hold'), /FOREIGN KEY/, "a charge's hold must exist");
});

t.test('a migration that leaves a broken foreign key is refused and rolled back', async (t) => {
  const dbPath = join(tempDir(t), 'gateway.db');
  const old = databaseBefore('004_', dbPath);
  // A charge whose hold row is missing, as only a database written with foreign keys off can hold.
  old.pragma('foreign_keys = OFF');
  old.exec(`INSERT INTO accounts (id, email, created_at) VALUES (1, 'old@example.com', 0);
    INSERT INTO journal (account_id, key_id, kind, amount, hold_id, created_at) VALUES (1, 7, 'charge', -300, 'lost', 3);`);
  old.close();

  t.throws(() => openSqliteStore({ path: dbPath, commitIntervalMs: 1, clock: Date.now, backgroundWriter: false }),
    /migration 004_lean_batch_writes\.sql left 1 broken foreign keys \(journal row 1 → holds\)/);
  const db = new Database(dbPath, { readonly: true });
  t.teardown(() => db.close());
  t.notOk(db.prepare(`SELECT 1 FROM schema_migrations WHERE name LIKE '004_%'`).get(), 'not recorded as applied');
  t.match(db.prepare(`SELECT sql FROM sqlite_master WHERE name = 'journal'`).pluck().get(), /AUTOINCREMENT/, 'the old journal is intact');
  t.equal(db.prepare('SELECT COUNT(*) FROM journal').pluck().get(), 1, 'with its row');
});

t.test('migration 010: the CHECK constraints of the tables every batch writes build no temporary B-tree, and refuse what they did', async (t) => {
  const dbPath = join(tempDir(t), 'gateway.db');
  const old = databaseBefore('010_', dbPath);
  old.exec(`${OLD_ROWS}
    INSERT INTO request_history (request_id, time, account_id, key_id, route, attempts, status, stream, input_tokens,
      output_tokens, cache_read_tokens, cache_write_tokens, hold, cost, latency_ms) VALUES ('req_1', 3, 1, 7, '/v1/messages', '[]', 'ok', 0, 1, 2, 0, 0, 900, 300, 1);
  `);
  const rows = (db: Database.Database) => ['holds', 'journal', 'request_history'].map((table) => db.prepare(`SELECT * FROM ${table} ORDER BY 1`).all());
  const before = rows(old);
  const temporaryBtrees = (db: Database.Database, statement: keyof typeof BATCH_SQL) => {
    const sql = BATCH_SQL[statement];
    const ops = db.prepare(`EXPLAIN ${sql}`).all(...new Array(sql.split('?').length - 1).fill(null)) as { opcode: string }[];
    return ops.filter((o) => o.opcode === 'OpenEphemeral').length;
  };
  // `old` has read the schema before the migration: the schema cookie must tell it to read it again.
  t.equal(temporaryBtrees(old, 'insertHistory'), 1, 'before: a temporary B-tree for the list of statuses');

  await openStore(storeConfig(dbPath)).close();
  t.same(rows(old), before, 'every row kept');
  t.same(old.pragma('integrity_check'), [{ integrity_check: 'ok' }]);
  for (const statement of ['insertHold', 'endHold', 'insertCharge', 'insertHistory'] as const) {
    t.equal(temporaryBtrees(old, statement), 0, `${statement}: none, seen from a connection opened before`);
  }
  old.pragma('foreign_keys = ON');
  t.throws(() => old.prepare(`UPDATE holds SET status = 'gone' WHERE id = 'h1'`).run(), /CHECK/, 'a hold status outside the list');
  t.throws(() => old.prepare(`INSERT INTO journal (account_id, kind, amount, created_at) VALUES (1, 'gift', 5, 0)`).run(), /CHECK/, 'a journal kind outside the list');
  t.throws(() => old.prepare(`UPDATE request_history SET status = 'fine'`).run(), /CHECK/, 'a history status outside the list');
  t.doesNotThrow(() => old.prepare(`UPDATE holds SET status = 'released' WHERE id = 'h1'`).run(), 'a status in the list');
  old.close();
});

t.test('better-sqlite3 12 is refused on Node 24.19 and later, where it aborts the process (nodejs/node#65446)', async (t) => {
  t.match(sqliteDriverProblem('24.19.0', '12.4.1'), /better-sqlite3 12\.4\.1 aborts on Node 24\.19\.0.*better-sqlite3@13/);
  t.match(sqliteDriverProblem('25.1.0', '12.4.1'), /aborts/);
  t.equal(sqliteDriverProblem('24.18.0', '12.4.1'), null);
  t.equal(sqliteDriverProblem('20.20.2', '12.4.1'), null);
  t.equal(sqliteDriverProblem('24.21.0', '13.0.1'), null);
  t.equal(sqliteDriverProblem(), null, 'this process: a working pair');
});
