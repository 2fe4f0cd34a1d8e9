import t from 'tap';
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { openStore } from '../../../lib/store/index.js';
import { checkInvariants } from '../../helpers/invariants.js';
import { openSql } from '../../helpers/sql.js';
import { backends, freshStore, historyRow, poisonHistory, seedAccount, storeConfig, tempStore } from './fixtures/store.js';

const USD = 1_000_000_000;

backends(t, 'reserve, settle and release end each hold exactly once', async (t, backend) => {
  const { store } = await freshStore(t, backend);
  const a = await seedAccount(store, 10 * USD);
  const reserve = (amount: number) =>
    store.ledger.reserve({ accountId: a.accountId, keyId: a.keyId, amount, monthlyLimitNano: null });

  const r1 = await reserve(3 * USD);
  if (!r1.ok) throw new Error('refused');
  t.same(await store.ledger.balance(a.accountId), { balance: 10 * USD, held: 3 * USD, available: 7 * USD });
  t.equal(await store.ledger.settle(r1.hold.id, 1.25 * USD), 1.25 * USD, 'charged the actual usage');
  t.equal(await store.ledger.settle(r1.hold.id, 1 * USD), null, 'a second settle does nothing');
  t.equal(await store.ledger.release(r1.hold.id), false, 'nor does a release after the settle');

  const r2 = await reserve(2 * USD);
  if (!r2.ok) throw new Error('refused');
  t.equal(await store.ledger.settle(r2.hold.id, 5 * USD), 2 * USD, 'a charge above the hold is clamped to it');
  const r3 = await reserve(2 * USD);
  if (!r3.ok) throw new Error('refused');
  t.equal(await store.ledger.settle(r3.hold.id, -7), 0, 'a negative charge is clamped to zero');
  const r4 = await reserve(2 * USD);
  if (!r4.ok) throw new Error('refused');
  t.equal(await store.ledger.settle(r4.hold.id, NaN), 0, 'a non-number charge is zero');
  const r5 = await reserve(1 * USD);
  if (!r5.ok) throw new Error('refused');
  t.equal(await store.ledger.release(r5.hold.id), true);
  t.equal(await store.ledger.release(r5.hold.id), false, 'released once');

  t.same(await store.ledger.balance(a.accountId), { balance: 6.75 * USD, held: 0, available: 6.75 * USD });
  t.equal(await store.ledger.monthToDate(a.keyId), 3.25 * USD);
  t.same(await checkInvariants(store, { noOpenHolds: true }), []);
  const kinds = (await store.ledger.entries(a.accountId)).map((e) => [e.kind, e.amountNano]);
  t.same(kinds, [['charge', -2 * USD], ['charge', -1.25 * USD], ['grant', 10 * USD]], 'zero charges add no entry');
});

backends(t, '200 concurrent reserves against a balance for 20 holds: exactly 20 admitted, overspend 0', async (t, backend) => {
  const { store } = await freshStore(t, backend);
  const hold = 50_000_000;
  const a = await seedAccount(store, 20 * hold);
  const results = await Promise.all(Array.from({ length: 200 }, () =>
    store.ledger.reserve({ accountId: a.accountId, keyId: a.keyId, amount: hold, monthlyLimitNano: null })));
  const admitted = results.filter((r) => r.ok);
  t.equal(admitted.length, 20);
  t.same(new Set(results.filter((r) => !r.ok).map((r) => !r.ok && r.reason)), new Set(['insufficient_credit']));
  // Settle every admitted hold in full, concurrently: the balance lands exactly on zero.
  await Promise.all(admitted.map((r) => r.ok && store.ledger.settle(r.hold.id, hold)));
  const bal = await store.ledger.balance(a.accountId);
  t.equal(bal.balance, 0, 'overspend 0');
  t.same(await checkInvariants(store, { noOpenHolds: true }), []);
});

backends(t, '200 concurrent reserves against a monthly limit for 20 holds: exactly 20 admitted', async (t, backend) => {
  const { store } = await freshStore(t, backend);
  const hold = 10_000_000;
  const a = await seedAccount(store, 1000 * USD, { monthlyLimitNano: 20 * hold });
  const results = await Promise.all(Array.from({ length: 200 }, () =>
    store.ledger.reserve({ accountId: a.accountId, keyId: a.keyId, amount: hold, monthlyLimitNano: 20 * hold })));
  const admitted = results.filter((r) => r.ok);
  t.equal(admitted.length, 20);
  t.same(new Set(results.filter((r) => !r.ok).map((r) => !r.ok && r.reason)), new Set(['monthly_limit_reached']));
  await Promise.all(admitted.map((r) => r.ok && store.ledger.settle(r.hold.id, hold)));
  t.equal(await store.ledger.monthToDate(a.keyId), 20 * hold, 'month-to-date reaches the limit, never above');
  const next = await store.ledger.reserve({ accountId: a.accountId, keyId: a.keyId, amount: 1, monthlyLimitNano: 20 * hold });
  t.match(next, { ok: false, reason: 'monthly_limit_reached', monthToDate: 20 * hold });
  t.same(await checkInvariants(store, { noOpenHolds: true }), []);
});

backends(t, 'refusal reasons: insufficient credit, hold too large for the balance or the limit', async (t, backend) => {
  const { store } = await freshStore(t, backend);
  const a = await seedAccount(store, 1 * USD, { monthlyLimitNano: 5 * USD });
  const reserve = (amount: number, limit: number | null = 5 * USD) =>
    store.ledger.reserve({ accountId: a.accountId, keyId: a.keyId, amount, monthlyLimitNano: limit });
  t.match(await reserve(2 * USD), { ok: false, reason: 'hold_too_large', exceeds: 'balance', balance: 1 * USD });
  await store.ledger.grant(a.accountId, 99 * USD);
  t.match(await reserve(6 * USD), { ok: false, reason: 'hold_too_large', exceeds: 'monthly_limit', limit: 5 * USD });
  const big = await reserve(90 * USD, null);
  t.ok(big.ok, 'no limit: only the balance counts');
  t.match(await reserve(20 * USD, null), { ok: false, reason: 'insufficient_credit', available: 10 * USD },
    'within the balance but not the available credit: insufficient, not too large');
  if (big.ok) await store.ledger.release(big.hold.id);

  const empty = await seedAccount(store, 0);
  t.match(await store.ledger.reserve({ accountId: empty.accountId, keyId: empty.keyId, amount: 5, monthlyLimitNano: null }),
    { ok: false, reason: 'insufficient_credit', available: 0 }, 'no credit at all is insufficient credit');
  t.ok((await store.ledger.reserve({ accountId: empty.accountId, keyId: empty.keyId, amount: 0, monthlyLimitNano: null })).ok,
    'a zero hold (free offer) is admitted');
  t.throws(() => reserve(-1), { code: 'invalid' });
  t.throws(() => reserve(1.5), { code: 'invalid' });
});

backends(t, 'the monthly limit restarts with the calendar month (UTC), also across a restart', async (t, backend) => {
  let now = Date.UTC(2025, 0, 31, 23, 59, 0);
  const clock = () => now;
  const { store, dbPath } = await freshStore(t, backend, { clock });
  const limit = 1 * USD;
  const a = await seedAccount(store, 100 * USD, { monthlyLimitNano: limit });
  const reserve = (s = store) => s.ledger.reserve({ accountId: a.accountId, keyId: a.keyId, amount: limit, monthlyLimitNano: limit });

  const jan = await reserve();
  if (!jan.ok) throw new Error('refused');
  t.match(await reserve(), { ok: false, reason: 'monthly_limit_reached' }, 'an open hold counts against the limit');
  await store.ledger.settle(jan.hold.id, limit);
  t.match(await reserve(), { ok: false, reason: 'monthly_limit_reached', monthToDate: limit });

  now = Date.UTC(2025, 1, 1, 0, 0, 1);
  t.equal(await store.ledger.monthToDate(a.keyId), 0, 'February starts at zero');
  const feb = await reserve();
  t.ok(feb.ok, 'admitted again in February');
  if (feb.ok) await store.ledger.settle(feb.hold.id, limit / 4);
  await store.close();

  const reopened = openStore(storeConfig(dbPath), { clock });
  t.teardown(() => reopened.close());
  t.equal(await reopened.ledger.monthToDate(a.keyId), limit / 4, "a restart reloads this month's spend only");
  t.match(await reserve(reopened), { ok: false, reason: 'monthly_limit_reached', monthToDate: limit / 4 });
  t.same(await checkInvariants(reopened, { noOpenHolds: true }), []);
});

backends(t, 'charges are written in batches, not per call (PostgreSQL: each hold at its admission)', async (t, backend) => {
  // No batch until the flush below: the reads between (a round trip each on PostgreSQL) cannot race one.
  const { store, dbPath } = await freshStore(t, backend, { commitIntervalMs: 60_000 });
  const a = await seedAccount(store, 10 * USD);
  const reader = await openSql(dbPath, { readonly: true });
  t.teardown(() => reader.close());
  const count = (sql: string) => reader.value(sql);
  const results = await Promise.all(Array.from({ length: 50 }, () =>
    store.ledger.reserve({ accountId: a.accountId, keyId: a.keyId, amount: 1000, monthlyLimitNano: null })));
  // SQLite admits in memory and writes holds with the batch; PostgreSQL admits in the database.
  t.equal(await count('SELECT COUNT(*) FROM holds'), backend === 'sqlite' ? 0 : 50, 'holds before the batch');
  for (const r of results) if (r.ok) await store.ledger.settle(r.hold.id, 500);
  t.equal(await count(`SELECT COUNT(*) FROM journal WHERE kind = 'charge'`), 0, 'no charge written yet');
  t.equal((await store.ledger.balance(a.accountId)).balance, 10 * USD - 50 * 500, 'the store counts them already');
  t.equal(await store.ledger.monthToDate(a.keyId), 50 * 500);
  await store.flush();
  t.equal(await count(`SELECT COUNT(*) FROM holds WHERE status = 'settled' AND charged = 500`), 50, 'one batch ended them all');
  t.equal(await count(`SELECT COUNT(*) FROM journal WHERE kind = 'charge'`), 50, 'and posted their charges');
  t.same(await checkInvariants(store, { noOpenHolds: true }), []);
});

backends(t, 'a credit grant by another process is seen by the running store at its next sync', async (t, backend) => {
  const { store, dbPath } = await freshStore(t, backend);
  const a = await seedAccount(store, 1 * USD);
  const r = await store.ledger.reserve({ accountId: a.accountId, keyId: a.keyId, amount: 0.4 * USD, monthlyLimitNano: null });
  if (!r.ok) throw new Error('refused');
  await store.ledger.settle(r.hold.id, 0.25 * USD);
  await store.flush();

  const v0 = await store.sync();
  const cli = openStore(storeConfig(dbPath));
  t.equal((await cli.ledger.balance(a.accountId)).balance, 0.75 * USD, 'the other process sees the charge');
  await cli.ledger.grant(a.accountId, 5 * USD, 'top up by the operator');
  await cli.close();

  // SQLite's balances are in memory until the sync; PostgreSQL's are the database's.
  if (backend === 'sqlite') t.equal((await store.ledger.balance(a.accountId)).balance, 0.75 * USD, 'not yet synced');
  t.equal(await store.sync(), v0, 'a credit leaves cached keys and routing valid: the change counter stays');
  t.equal((await store.ledger.balance(a.accountId)).balance, 5.75 * USD, 'the grant is counted at the sync');

  // Our own later charges and their grant interleave in the journal without double counting.
  const r2 = await store.ledger.reserve({ accountId: a.accountId, keyId: a.keyId, amount: 5 * USD, monthlyLimitNano: null });
  t.ok(r2.ok, 'the granted credit is available for admission');
  if (r2.ok) await store.ledger.settle(r2.hold.id, 1 * USD);
  t.same(await checkInvariants(store, { noOpenHolds: true }), []);
  t.equal((await store.ledger.balance(a.accountId)).balance, 4.75 * USD);
});

t.test('SQLite: the writer thread\'s batches are taken in as they land, so the next sync() reads no journal', async (t) => {
  // Counts the main connection's reads of the journal for foreign rows (the writer thread has a
  // better-sqlite3 of its own, which this does not patch).
  const statement = Object.getPrototypeOf(new Database(':memory:').prepare('SELECT 1')) as { all(...a: unknown[]): unknown[] };
  const all = statement.all;
  let journalReads = 0;
  statement.all = function (this: { source: string }, ...args: unknown[]) {
    if (this.source.includes('FROM journal') && this.source.includes('id > ?')) journalReads++;
    return all.apply(this, args);
  };
  t.teardown(() => {
    statement.all = all;
  });
  const { store, dbPath } = tempStore(t);
  const a = await seedAccount(store, 10 * USD);
  await store.sync();
  for (let round = 0; round < 3; round++) {
    const r = await store.ledger.reserve({ accountId: a.accountId, keyId: a.keyId, amount: 0.01 * USD, monthlyLimitNano: null });
    if (!r.ok) throw new Error(`hold refused: ${r.reason}`); // without one there is no batch to take in
    await store.ledger.settle(r.hold.id, 0.005 * USD);
    await store.flush();
    const before = journalReads;
    await store.sync();
    t.equal(journalReads, before, `round ${round}: a request's sync() after our own batch reads no journal`);
  }
  // Another process's commit is still read at the next sync().
  const cli = openStore(storeConfig(dbPath));
  await cli.ledger.grant(a.accountId, 5 * USD, 'top up by the operator');
  await cli.close();
  const before = journalReads;
  await store.sync();
  t.equal(journalReads, before + 1, 'a foreign commit is read by the next sync()');
  t.equal((await store.ledger.balance(a.accountId)).balance, 15 * USD - 0.015 * USD, 'and its credit counted');
});

backends(t, 'our own batches are counted once: no charge counts twice, caches stay valid', async (t, backend) => {
  const { store, dbPath } = await freshStore(t, backend);
  const a = await seedAccount(store, 10 * USD);
  const v0 = await store.sync();
  for (let round = 0; round < 5; round++) {
    const holds = await Promise.all(Array.from({ length: 20 }, () =>
      store.ledger.reserve({ accountId: a.accountId, keyId: a.keyId, amount: 0.01 * USD, monthlyLimitNano: null })));
    for (const h of holds) if (h.ok) await store.ledger.settle(h.hold.id, 0.005 * USD);
    store.keys.touch(a.keyId);
    // Sync while the batch may be in flight, and after it landed.
    await store.sync();
    await store.flush();
    await store.sync();
  }
  t.equal((await store.ledger.balance(a.accountId)).balance, 9.5 * USD, '100 charges of half a cent, each counted once');
  t.equal(await store.ledger.monthToDate(a.keyId), 0.5 * USD);
  t.equal(await store.sync(), v0, 'our own batches (charges, history, last use) do not empty the key and routing caches');
  const reader = await openSql(dbPath, { readonly: true });
  t.teardown(() => reader.close());
  t.equal(await reader.value('SELECT balance FROM balances WHERE account_id = ?', a.accountId), 9.5 * USD, 'the database agrees');
  t.same(await checkInvariants(store, { noOpenHolds: true }), []);
  await store.keys.revoke(a.keyId);
  t.not(await store.sync(), v0, 'a key change still moves the counter');
});

backends(t, 'two stores on one database (processes, nodes) each count the other\'s charges once, and their own once', async (t, backend) => {
  const { store: a, dbPath } = await freshStore(t, backend);
  const acct = await seedAccount(a, 10 * USD);
  const { store: b } = await freshStore(t, backend, { dbPath });
  const charge = async (s: typeof a, usd: number) => {
    const h = await s.ledger.reserve({ accountId: acct.accountId, keyId: acct.keyId, amount: usd * USD, monthlyLimitNano: null });
    if (!h.ok) throw new Error('refused');
    await s.ledger.settle(h.hold.id, usd * USD);
  };
  await b.sync();
  await Promise.all([charge(a, 1), charge(b, 2), charge(a, 0.5)]);
  await Promise.all([a.flush(), b.flush()]);
  await a.sync();
  await b.sync();
  t.equal((await a.ledger.balance(acct.accountId)).balance, 6.5 * USD, 'the first sees both');
  t.equal((await b.ledger.balance(acct.accountId)).balance, 6.5 * USD, 'the second sees both');
  t.equal(await b.ledger.monthToDate(acct.keyId), 3.5 * USD);
  t.same(await checkInvariants(a, { noOpenHolds: true }), []);
});

backends(t, 'a batch that fails is written again with the next one, nothing lost or doubled', async (t, backend) => {
  const { store, dbPath } = await freshStore(t, backend);
  const a = await seedAccount(store, 10 * USD);
  // A trigger refuses every history row while the poison table has a row: that whole batch fails.
  const db = await openSql(dbPath);
  t.teardown(() => db.close());
  await poisonHistory(db);
  const h = await store.ledger.reserve({ accountId: a.accountId, keyId: a.keyId, amount: 0.1 * USD, monthlyLimitNano: null });
  if (!h.ok) throw new Error('refused');
  await store.ledger.settle(h.hold.id, 0.05 * USD);
  store.history.record(historyRow(a, 'req-fail-once'));
  await t.rejects(store.flush(), /injected failure/, 'the first attempt fails');
  t.ok(await store.history.get('req-fail-once'), 'the row is still readable while queued again');
  t.equal((await store.ledger.balance(a.accountId)).balance, 9.95 * USD, 'the charge still counts');
  await db.exec('DELETE FROM poison');
  await store.flush();
  t.equal(await db.value('SELECT COUNT(*) FROM request_history'), 1, 'the history row, once');
  t.equal(await db.value(`SELECT COUNT(*) FROM journal WHERE kind = 'charge'`), 1, 'the charge, once');
  t.equal((await store.ledger.balance(a.accountId)).balance, 9.95 * USD);
  t.same(await checkInvariants(store, { noOpenHolds: true }), []);
});

t.test("SQLite: held counts the open holds another process on the file has written (a serving gateway, seen by the command line)", async (t) => {
  const { store: server, dbPath } = tempStore(t);
  const a = await seedAccount(server, 10 * USD);
  const b = await seedAccount(server, 10 * USD);
  const reserve = async (store: typeof server, who: typeof a, amount: number) => {
    const r = await store.ledger.reserve({ accountId: who.accountId, keyId: who.keyId, amount, monthlyLimitNano: null });
    if (!r.ok) throw new Error('refused');
    return r.hold.id;
  };
  const first = await reserve(server, a, 2 * USD);
  await reserve(server, a, 0.5 * USD);
  await reserve(server, b, 4 * USD);
  await server.flush();

  const cli = openStore(storeConfig(dbPath));
  t.teardown(() => cli.close());
  t.same(await cli.ledger.balance(a.accountId), { balance: 10 * USD, held: 2.5 * USD, available: 7.5 * USD },
    "the server's holds of this account, not another's");
  await reserve(cli, a, 1 * USD);
  await cli.flush();
  t.same(await cli.ledger.balance(a.accountId), { balance: 10 * USD, held: 3.5 * USD, available: 6.5 * USD },
    'its own hold counted once, written or not');
  t.equal((await server.ledger.balance(a.accountId)).held, 3.5 * USD, 'and the server sees the other process\'s hold');

  await server.ledger.settle(first, 1.5 * USD);
  await server.flush();
  await cli.sync();
  t.same(await cli.ledger.balance(a.accountId), { balance: 8.5 * USD, held: 1.5 * USD, available: 7 * USD },
    'a settled hold leaves held and its charge the balance');
});

backends(t, 'close releases holds still open', async (t, backend) => {
  const { store, dbPath } = await freshStore(t, backend);
  const a = await seedAccount(store, 1 * USD);
  const r = await store.ledger.reserve({ accountId: a.accountId, keyId: a.keyId, amount: 1000, monthlyLimitNano: null });
  t.ok(r.ok);
  await store.close();
  t.same(await checkInvariants(dbPath, { noOpenHolds: true }), []);
  if (r.ok) t.equal(await store.ledger.settle(r.hold.id, 10), null, 'a settle after close charges nothing');
});

t.test('SQLite: a restart releases the holds of a process that died, never those of a live one (PostgreSQL: nodes.test.ts)', async (t) => {
  const { store, dbPath } = tempStore(t);
  const a = await seedAccount(store, 1 * USD);
  await store.close();

  const child = spawn(process.execPath, [
    ...process.execArgv.filter((arg) => arg.includes('@tapjs/typescript')),
    fileURLToPath(new URL('./fixtures/crash-child.ts', import.meta.url)), dbPath, String(a.accountId), String(a.keyId),
  ], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NODE_OPTIONS: '' } });
  let out = '';
  child.stdout.setEncoding('utf8');
  for await (const chunk of child.stdout) {
    out += chunk;
    if (out.includes('\n')) break;
  }
  const holdId = /^held (\S+)/.exec(out)?.[1];
  t.ok(holdId, 'the child took a hold');
  const status = () => {
    const db = new Database(dbPath, { readonly: true });
    try {
      return db.prepare('SELECT status FROM holds WHERE id = ?').pluck().get(holdId);
    } finally {
      db.close();
    }
  };

  const whileAlive = openStore(storeConfig(dbPath));
  t.equal(status(), 'open', "opening the store while the child runs leaves the child's hold alone");
  t.same(await whileAlive.ledger.balance(a.accountId), { balance: 1 * USD, held: 1000, available: 1 * USD - 1000 },
    "and counts it as held");
  await whileAlive.close();

  child.kill('SIGKILL');
  await once(child, 'exit');
  const restarted = openStore(storeConfig(dbPath));
  t.teardown(() => restarted.close());
  t.equal(status(), 'released', 'the dead process hold is released at open');
  t.equal((await restarted.ledger.balance(a.accountId)).available, 1 * USD);
  t.same(await checkInvariants(restarted, { noOpenHolds: true }), []);
});

t.test('SQLite: a hold left open under our own pid by an earlier process (a restarted container) is released', async (t) => {
  const { store, dbPath } = tempStore(t);
  const a = await seedAccount(store, 1 * USD);
  const live = await store.ledger.reserve({ accountId: a.accountId, keyId: a.keyId, amount: 10, monthlyLimitNano: null });
  await store.flush();
  const db = new Database(dbPath);
  db.prepare(`INSERT INTO holds (id, account_id, key_id, amount, status, created_at, owner_pid, owner_token)
    VALUES ('stale', ?, ?, 500, 'open', 0, ?, 'previous-process')`).run(a.accountId, a.keyId, process.pid);
  db.close();

  const second = openStore(storeConfig(dbPath));
  await second.close();
  const check = new Database(dbPath, { readonly: true });
  t.teardown(() => check.close());
  const statusOf = (id: string) => check.prepare('SELECT status FROM holds WHERE id = ?').pluck().get(id);
  t.equal(statusOf('stale'), 'released');
  t.equal(live.ok && statusOf(live.hold.id), 'open', 'the hold of a store still open in this process stays open');
});

backends(t, 'a grant needs an existing account and a positive amount', async (t, backend) => {
  const { store } = await freshStore(t, backend);
  await t.rejects(store.ledger.grant(42, 100), { code: 'not_found' });
  const a = await seedAccount(store, 0);
  await t.rejects(store.ledger.grant(a.accountId, 0), { code: 'invalid' });
  await t.rejects(store.ledger.grant(a.accountId, 0.5), { code: 'invalid' });
  t.same(await checkInvariants(store), []);
});
