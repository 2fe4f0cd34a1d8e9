// gateway db migrate and db copy, and the operator commands on either store, through the command
// line entry point with a config file.
import t, { type Test } from 'tap';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { main } from '../../../lib/cli.js';
import { migrationsDir } from '../../../lib/store/sqlite/open.js';
import { pgMigrationsDir } from '../../../lib/store/postgres/migrate.js';
import { testConfigObject } from '../../helpers/gateway.js';
import { freshPostgresUrl, postgresSkip } from '../../helpers/postgres.js';
import { openSql } from '../../helpers/sql.js';
import { hashApiKey } from '../../../lib/store/api-key.js';
import { openStore, type HistoryRow, type Store } from '../../../lib/store/index.js';
import { REFUSALS_RECORDED_PER_MINUTE } from '../../../lib/store/refusal-counts.js';
import { backends, historyRow, seedAccount, storeConfig, tempDir, tempStore } from '../store/fixtures/store.js';

/** Run the command line; its exit code and what it wrote. */
async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const [write, writeErr] = [process.stdout.write, process.stderr.write];
  process.stdout.write = ((s: string) => (out.push(s), true)) as typeof process.stdout.write;
  process.stderr.write = ((s: string) => (err.push(s), true)) as typeof process.stderr.write;
  try {
    return { code: await main(argv), out: out.join(''), err: err.join('') };
  } finally {
    process.stdout.write = write;
    process.stderr.write = writeErr;
  }
}

const sqlFiles = (dir: string) => readdirSync(dir).filter((f) => f.endsWith('.sql')).sort();

backends(t, 'db migrate applies the pending migrations once and does nothing else; the commands then work on that store', async (t, backend) => {
  const dir = tempDir(t);
  const location = backend === 'sqlite' ? join(dir, 'data', 'gateway.db') : await freshPostgresUrl();
  const file = join(dir, 'gateway.json');
  const config = testConfigObject(location);
  if (backend === 'postgres') config.storage = { postgres: location };
  writeFileSync(file, JSON.stringify(config));

  const first = await cli(['db', 'migrate', '--config', file, '--json']);
  t.equal(first.code, 0, first.err);
  t.same(JSON.parse(first.out).applied, sqlFiles(backend === 'sqlite' ? migrationsDir : pgMigrationsDir), 'every migration, in order');
  const again = await cli(['db', 'migrate', '--config', file]);
  t.equal(again.code, 0);
  t.match(again.out, /is up to date\./);
  t.notMatch(again.out, /\*\*\*|secret/, 'no password in the output');

  const db = await openSql(location);
  t.teardown(() => db.close());
  t.equal(await db.value('SELECT COUNT(*) FROM accounts'), 0, 'nothing but the schema');
  if (backend === 'postgres') t.equal(await db.value('SELECT COUNT(*) FROM nodes'), 0, 'no node registered');

  const codes = [
    (await cli(['accounts', 'create', '--email', 'ops@example.com', '--config', file])).code,
    (await cli(['credits', 'grant', '--account', 'ops@example.com', '--amount', '2.5', '--config', file])).code,
  ];
  const shown = await cli(['credits', 'show', '--account', 'ops@example.com', '--config', file, '--json']);
  t.same([...codes, shown.code], [0, 0, 0]);
  t.match(JSON.parse(shown.out), { balanceNano: 2_500_000_000 });
  if (backend === 'postgres') t.equal(await db.value('SELECT COUNT(*) FROM nodes'), 0, 'each command\'s store left no node behind');
});

t.test('a PostgreSQL database that cannot be reached: one error line, exit 1', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'gateway.json');
  const config = testConfigObject('unused');
  config.storage = { postgres: 'postgres://gw:s3cret@127.0.0.1:1/gateway' };
  writeFileSync(file, JSON.stringify(config));
  for (const argv of [['db', 'migrate'], ['accounts', 'create', '--email', 'x@example.com']]) {
    const r = await cli([...argv, '--config', file]);
    t.equal(r.code, 1, argv.join(' '));
    t.match(r.err, /^error: cannot reach the PostgreSQL database at postgres:\/\/gw:\*\*\*@127\.0\.0\.1:1\/gateway: /);
    t.notMatch(r.err, /s3cret/, 'the password is not shown');
  }
});

// ---- gateway db copy: a SQLite store into an empty PostgreSQL store ----

/** A PostgreSQL test, skipped (with the reason) only where PostgreSQL is not required and does not answer. */
function pgTest(name: string, fn: (t: Test) => Promise<void>): void {
  t.test(name, async (t) => {
    const skip = await postgresSkip();
    if (skip) return void t.plan(0, skip);
    await fn(t);
  });
}

/** A config file whose storage is a fresh PostgreSQL schema. */
async function postgresConfigFile(t: Test): Promise<{ file: string; url: string }> {
  const url = await freshPostgresUrl();
  const config = testConfigObject('unused');
  config.storage = { postgres: url };
  const file = join(tempDir(t), 'gateway.json');
  writeFileSync(file, JSON.stringify(config));
  return { file, url };
}

const MINUTE = 60_000;

/** A SQLite store with what a gateway that ran for a while holds, built through the store API; closed when it returns. */
async function realisticSqliteStore(t: Test) {
  const { store, dbPath } = tempStore(t, { backgroundWriter: false });
  const alice = await store.accounts.create({ email: 'Alice@Example.com', password: 'correct horse battery' });
  const bob = await store.accounts.create({ email: 'bob@example.com' });
  const carol = await store.accounts.create({ email: 'carol@example.com' }); // nothing but the account
  const limited = await store.keys.create({ accountId: alice.id, name: 'ci', allowedModels: ['test/gpt'], monthlyLimitNano: 4_000_000_000, rpm: 60, tpm: 100_000 });
  const revoked = await store.keys.create({ accountId: alice.id, name: 'old' });
  await store.keys.revoke(revoked.key.id);
  const bobKey = await store.keys.create({ accountId: bob.id, name: 'default' });
  await store.routing.set(alice.id, { allow: ['test/gpt', 'test/claude'], deny: ['test/claude'], priceCapInput: 3000, priceCapOutput: 15000 });
  await store.ledger.grant(alice.id, 10_000_000_000, 'welcome');
  await store.payments.create({ accountId: bob.id, providerRef: 'cs_paid', amountNano: 20_000_000_000, method: 'card' });
  await store.payments.confirm('cs_paid');
  await store.payments.create({ accountId: bob.id, providerRef: 'cs_pending', amountNano: 5_000_000_000, method: 'stablecoin' });
  await store.payments.create({ accountId: bob.id, providerRef: 'cs_failed', amountNano: 7_000_000_000, method: 'card' });
  await store.payments.fail('cs_failed');
  // Charges through reserve/settle, a released hold, and one left open (made open again below: a killed gateway's).
  let openHold = '';
  for (const [i, [key, account]] of ([[limited, alice], [limited, alice], [bobKey, bob]] as const).entries()) {
    const r = await store.ledger.reserve({ accountId: account.id, keyId: key.key.id, amount: 1_000_000_000, monthlyLimitNano: key.key.monthlyLimitNano, requestId: `req_${i}` });
    if (!r.ok) throw new Error('reserve refused');
    await store.ledger.settle(r.hold.id, 123_456_789 * (i + 1));
  }
  const r = await store.ledger.reserve({ accountId: bob.id, keyId: bobKey.key.id, amount: 500_000_000, monthlyLimitNano: null });
  if (!r.ok) throw new Error('reserve refused');
  openHold = r.hold.id;
  await store.ledger.release(openHold);
  store.keys.touch(limited.key.id);
  const now = Date.now();
  for (let i = 0; i < 5; i++) {
    store.history.record({
      ...historyRow({ accountId: alice.id, keyId: limited.key.id }, `req_${String(i).padStart(3, '0')}`), time: now - i * 1000, stream: i % 2 === 0,
      model: 'test/gpt', requestedModel: i === 0 ? 'gpt-alias' : null, listing: 'test/gpt@sim-chat',
      attempts: [{ listing: 'test/gpt@sim-chat', outcome: 'ok', status: 200, durationMs: 12 }],
      usage: { input: 100 + i, output: 20, cacheRead: 5, cacheWrite: 3, cacheWrite1h: 1 }, holdNano: 1_000_000_000, costNano: 123_456_789, ttfbMs: 7,
    });
  }
  const minute = Math.floor(now / MINUTE) * MINUTE;
  for (let i = 0; i < REFUSALS_RECORDED_PER_MINUTE + 3; i++) {
    store.history.recordRefusal({
      ...historyRow({ accountId: bob.id, keyId: bobKey.key.id }, `req_refused_${i}`), time: minute + i, status: 'error', httpStatus: 400,
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 }, error: 'Invalid JSON body',
    });
  }
  const session = await store.sessions.create(alice.id, 3_600_000);
  await store.close();
  // A gateway killed mid-request leaves its hold open in the file.
  const db = await openSql(dbPath);
  await db.exec(`UPDATE holds SET status = 'open', ended_at = NULL WHERE id = '${openHold}'`);
  await db.close();
  return {
    dbPath, accounts: [alice, bob, carol], keys: [limited, revoked, bobKey], session: session.token,
    payments: ['cs_paid', 'cs_pending', 'cs_failed'], requestIds: ['req_000', 'req_004'],
  };
}

/** Everything the store API reads about `fixture`, for comparing two stores. */
async function readBack(store: Store, f: Awaited<ReturnType<typeof realisticSqliteStore>>) {
  const out: Record<string, unknown> = {};
  for (const a of f.accounts) {
    out[`account ${a.email}`] = {
      account: await store.accounts.byEmail(a.email.toUpperCase()), byId: await store.accounts.byId(a.id),
      balance: await store.ledger.balance(a.id), entries: await store.ledger.entries(a.id),
      keys: await store.keys.list(a.id), routing: await store.routing.get(a.id), payments: await store.payments.list(a.id),
      history: await store.history.list(a.id), daily: await store.history.daily(a.id, 0, Date.now() + 86_400_000),
    };
  }
  for (const k of f.keys) {
    const found = await store.keys.findByPrefix(k.key.prefix);
    out[`key ${k.key.id}`] = { found, authenticates: found.some((c) => c.hash.equals(hashApiKey(k.secret))), monthToDate: await store.ledger.monthToDate(k.key.id) };
  }
  out.login = await store.accounts.checkPassword('alice@example.com', 'correct horse battery');
  out.session = await store.sessions.get(f.session);
  out.payments = await Promise.all(f.payments.map((ref) => store.payments.byRef(ref)));
  out.history = await Promise.all(f.requestIds.map((id) => store.history.get(id)));
  out.count = await store.accounts.count();
  return out;
}

pgTest('db copy: a SQLite store reads the same through the PostgreSQL store, ids keep counting after it, a second copy is refused', async (t) => {
  const fixture = await realisticSqliteStore(t);
  const { file, url } = await postgresConfigFile(t);

  const r = await cli(['db', 'copy', '--from', fixture.dbPath, '--config', file, '--json']);
  t.equal(r.code, 0, r.err);
  const report = JSON.parse(r.out);
  const rows = Object.fromEntries(report.tables.map((x: { name: string; rows: number }) => [x.name, x.rows]));
  t.match(rows, { accounts: 3, api_keys: 3, routing_settings: 1, payments: 3, holds: 4, journal: 5, balances: 2, dashboard_sessions: 1 });
  t.equal(rows.request_history, 5 + REFUSALS_RECORDED_PER_MINUTE + 1, 'the refusals past the first few are one summary row');
  t.equal(report.accountsVerified, 3);
  t.equal(report.releasedOpenHolds, 1, 'the killed gateway\'s open hold');
  t.equal(report.totalBalanceNano, String(30_000_000_000 - 123_456_789 * 6));

  const db = await openSql(url);
  t.teardown(() => db.close());
  t.same(await db.all(`SELECT status, node_id LIKE 'sqlite:%' AS owner FROM holds WHERE ended_at >= ${Date.now() - 60_000} AND charged = 0 AND status = 'released' AND request_id IS NULL`),
    [{ status: 'released', owner: true }], 'the open hold was copied released (before any node could sweep it), its owner kept');
  const src = await openSql(fixture.dbPath);
  const sourceCounter = await src.value('SELECT n FROM change_counter');
  await src.close();
  t.ok(await db.value('SELECT n FROM change_counter') >= sourceCounter, 'the change counter did not move back');

  const sqlite = openStore(storeConfig(fixture.dbPath));
  t.teardown(() => sqlite.close());
  const postgres = openStore(storeConfig(url));
  t.teardown(() => postgres.close());
  const expected = await readBack(sqlite, fixture);
  const copied = await readBack(postgres, fixture);
  t.same(copied, expected, 'every read of the store API answers the same');
  t.match(copied, { [`key ${fixture.keys[0].key.id}`]: { authenticates: true }, [`key ${fixture.keys[1].key.id}`]: { authenticates: true, found: [{ revokedAt: Number }] } });
  t.match(copied.login, { email: 'alice@example.com' });
  t.match(copied.session, { accountId: fixture.accounts[0].id });
  t.match((copied.history as HistoryRow[])[0], { requestedModel: 'gpt-alias', stream: true, attempts: [{ outcome: 'ok' }] });

  // New rows take ids above the copied ones.
  const dave = await postgres.accounts.create({ email: 'dave@example.com' });
  t.ok(dave.id > Math.max(...fixture.accounts.map((a) => a.id)));
  const daveKey = await postgres.keys.create({ accountId: dave.id, name: 'k' });
  t.ok(daveKey.key.id > Math.max(...fixture.keys.map((k) => k.key.id)));
  const entry = await postgres.ledger.grant(dave.id, 1_000_000_000);
  t.ok(entry.id > 5);
  const payment = await postgres.payments.create({ accountId: dave.id, providerRef: 'cs_new', amountNano: 1_000_000_000, method: 'card' });
  t.ok(payment.id > 3);

  const again = await cli(['db', 'copy', '--from', fixture.dbPath, '--config', file]);
  t.equal(again.code, 1);
  t.match(again.err, /^error: the PostgreSQL store at .* is not empty \(rows in accounts, api_keys, .*\); db copy only fills an empty store/);
  t.equal(await db.value('SELECT COUNT(*) FROM accounts'), 4, 'nothing written by the refused copy');
});

pgTest('db copy refuses a SQLite file a gateway serves, and a config without storage.postgres', async (t) => {
  const { store, dbPath } = tempStore(t, { exclusive: true }); // as `gateway serve` opens it
  await seedAccount(store, 1_000_000_000);
  const { file, url } = await postgresConfigFile(t);
  const r = await cli(['db', 'copy', '--from', dbPath, '--config', file]);
  t.equal(r.code, 1);
  t.match(r.err, /^error: database .* is in use by another gateway \(pid \d+, lock .*\.lock\); one serving process per database: stop that gateway before copying its store/);
  const db = await openSql(url);
  t.teardown(() => db.close());
  t.equal(await db.value(`SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema()`), 0, 'the target not even migrated');

  await store.close(); // stopped: now it copies
  t.equal((await cli(['db', 'copy', '--from', dbPath, '--config', file])).code, 0);

  const sqliteConfig = join(tempDir(t), 'sqlite.json');
  writeFileSync(sqliteConfig, JSON.stringify(testConfigObject(join(tempDir(t), 'other.db'))));
  const wrong = await cli(['db', 'copy', '--from', dbPath, '--config', sqliteConfig]);
  t.equal(wrong.code, 1);
  t.match(wrong.err, /storage\.postgres/);
  const missing = await cli(['db', 'copy', '--from', join(tempDir(t), 'nope.db'), '--config', file]);
  t.equal(missing.code, 1);
  t.match(missing.err, /no SQLite store at .*nope\.db/);
});

pgTest('db copy: a balance that disagrees with the journal fails the copy and rolls everything back', async (t) => {
  const { store, dbPath } = tempStore(t, { backgroundWriter: false });
  const a = await seedAccount(store, 2_000_000_000);
  await seedAccount(store, 1_000_000_000);
  await store.close();
  const src = await openSql(dbPath);
  await src.exec(`UPDATE balances SET balance = balance + 1 WHERE account_id = ${a.accountId}`);
  await src.close();
  const { file, url } = await postgresConfigFile(t);

  const r = await cli(['db', 'copy', '--from', dbPath, '--config', file]);
  t.equal(r.code, 1);
  t.match(r.err, new RegExp(`account ${a.accountId}: SQLite stores a balance of \\$2\\.000000001 but its journal sums to \\$2\\.00`));
  t.match(r.err, /rolled back, nothing was written/);
  t.match(r.out, /2 account\(s\) compared: MISMATCH, rolled back/);
  const json = await cli(['db', 'copy', '--from', dbPath, '--config', file, '--json']);
  t.equal(json.code, 1);
  t.match(JSON.parse(json.out), { ok: false, error: /rolled back/, mismatches: [/SQLite stores a balance of/], accountsVerified: 2 }, 'one JSON document');
  const db = await openSql(url);
  t.teardown(() => db.close());
  t.same([await db.value('SELECT COUNT(*) FROM accounts'), await db.value('SELECT COUNT(*) FROM journal')], [0, 0], 'rolled back');
});

pgTest('db copy: a row PostgreSQL refuses fails the copy with one error line and writes nothing', async (t) => {
  const { store, dbPath } = tempStore(t, { backgroundWriter: false });
  const a = await seedAccount(store, 1_000_000_000);
  store.history.record(historyRow(a, 'req_nul'));
  await store.close();
  const src = await openSql(dbPath);
  await src.exec(`UPDATE request_history SET error = 'a' || char(0) || 'b'`); // a text PostgreSQL cannot hold
  await src.close();
  const { file, url } = await postgresConfigFile(t);
  const r = await cli(['db', 'copy', '--from', dbPath, '--config', file]);
  t.equal(r.code, 1);
  t.match(r.err, /^error: db copy failed; nothing was copied: .*0x00/m);
  const db = await openSql(url);
  t.teardown(() => db.close());
  t.equal(await db.value('SELECT COUNT(*) FROM accounts'), 0, 'rolled back');
});

pgTest('db copy verifies accounts page by page: 2,500 accounts copy, one wrong balance on the third page is found', async (t) => {
  const { store, dbPath } = tempStore(t, { backgroundWriter: false });
  await store.close();
  const src = await openSql(dbPath);
  const ids = Array.from({ length: 2500 }, (_, i) => i + 1);
  await src.exec(`BEGIN;
    INSERT INTO accounts (id, email, created_at) VALUES ${ids.map((id) => `(${id}, 'u${id}@example.com', 1)`).join(', ')};
    INSERT INTO journal (account_id, kind, amount, note, created_at) VALUES ${ids.map((id) => `(${id}, 'grant', ${id * 1000}, 'x', 1)`).join(', ')};
    INSERT INTO balances (account_id, balance) VALUES ${ids.map((id) => `(${id}, ${id * 1000})`).join(', ')};
    COMMIT;`);
  await src.close();
  const first = await postgresConfigFile(t);
  const r = await cli(['db', 'copy', '--from', dbPath, '--config', first.file, '--json']);
  t.equal(r.code, 0, r.err);
  t.match(JSON.parse(r.out), { accountsVerified: 2500, totalBalanceNano: String(1000 * 2500 * 2501 / 2) });

  const corrupt = await openSql(dbPath);
  await corrupt.exec('UPDATE balances SET balance = 1 WHERE account_id = 2100');
  await corrupt.close();
  const second = await postgresConfigFile(t);
  const bad = await cli(['db', 'copy', '--from', dbPath, '--config', second.file, '--json']);
  t.equal(bad.code, 1);
  t.same(JSON.parse(bad.out).mismatches, [
    'account 2100: SQLite stores a balance of $0.000000001 but its journal sums to $0.0021',
    'account 2100: PostgreSQL stores a balance of $0.000000001 but its journal sums to $0.0021', // copied faithfully
  ], 'that account only');
});
