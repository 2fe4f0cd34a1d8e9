// Credit leases on PostgreSQL (lib/store/postgres/leases.ts): serving nodes admit on leased credit
// with no round trip, exactly, and give it back when another node needs it, when they close, or
// (through the sweep) when they die.
import t, { type Test } from 'tap';
import type { PostgresStore } from '../../../lib/store/postgres/store.js';
import { newPgBatch, pgExecutor, type PgBatch } from '../../../lib/store/postgres/batch.js';
import { Db } from '../../../lib/store/postgres/db.js';
import { LEASE_HOLDS, LOW_WATER_HOLDS } from '../../../lib/store/postgres/leases.js';
import { silentLogger } from '../../../lib/log.js';
import type { ReserveResult } from '../../../lib/store/types.js';
import { checkInvariants } from '../../helpers/invariants.js';
import { freshPostgresUrl, openPgNode, postgresSkip } from '../../helpers/postgres.js';
import { openSql } from '../../helpers/sql.js';
import { poll, until } from '../../helpers/until.js';
import { seedAccount } from './fixtures/store.js';

const USD = 1_000_000_000;
const HOLD = 10_000_000;
const skip = await postgresSkip();

/** Heartbeat and sweep timers that never fire within a test. */
const manual = { nodeTimings: { heartbeatMs: 3_600_000, sweepMs: 3_600_000 } };

/** A serving node: it listens (leases need the lease channel), and is listening before it is used. */
async function serving(t: Test, url: string, opts: Parameters<typeof openPgNode>[2] = {}): Promise<PostgresStore> {
  const store = await openPgNode(t, url, { listen: true, ...opts });
  await until('listening', () => store.listener!.listening, 5000);
  return store;
}

const reserve = (s: PostgresStore, a: { accountId: number; keyId: number }, amount = HOLD) =>
  s.ledger.reserve({ accountId: a.accountId, keyId: a.keyId, amount, monthlyLimitNano: null });

async function leaseRows(url: string): Promise<{ owner: string; node_id: string; amount: number; in_use: number }[]> {
  const db = await openSql(url);
  try {
    return await db.all('SELECT owner, node_id, amount, in_use FROM leases ORDER BY owner');
  } finally {
    await db.close();
  }
}

t.test('in steady state a serving node admits with no round trip: one lease call per many holds, none through the database', { skip }, async (t) => {
  const url = await freshPostgresUrl();
  const node = await serving(t, url);
  const a = await seedAccount(node, 100 * USD);
  const ledger = node.ledger as import('../../../lib/store/postgres/ledger.js').PgLedger;
  let synchronous = 0;
  const holds: ReserveResult[] = [];
  for (let i = 0; i < 200; i++) {
    const r = reserve(node, a);
    if (!(r instanceof Promise)) synchronous++;
    const done = await r;
    holds.push(done);
    if (done.ok) node.ledger.settle(done.hold.id, HOLD / 2);
  }
  t.ok(holds.every((h) => h.ok), 'all admitted');
  t.equal(ledger.groups.calls, 0, 'no reserve went to the database');
  t.ok(ledger.leaseGrows >= 1 && ledger.leaseGrows <= 200 / (LEASE_HOLDS - LOW_WATER_HOLDS) + 1, `one lease call per many holds (${ledger.leaseGrows} for 200)`);
  t.ok(synchronous >= 190, `admitted at once, without waiting for anything (${synchronous} of 200)`);
  await node.flush();
  t.equal((await node.ledger.balance(a.accountId)).balance, 100 * USD - 200 * (HOLD / 2), 'each charged once, at its end');
  const db = await openSql(url);
  t.teardown(() => db.close());
  t.equal(await db.value(`SELECT COUNT(*)::int FROM holds WHERE status = 'settled' AND charged = ?`, HOLD / 2), 200, 'every hold written, settled');
  t.same(await checkInvariants(node, { noOpenHolds: true }), []);
});

t.test('credit leased by one node and unused is returned when another needs it: admission stays exact', { skip }, async (t) => {
  const url = await freshPostgresUrl();
  const [a1, a2] = [await serving(t, url, manual), await serving(t, url, manual)];
  const a = await seedAccount(a1, 20 * HOLD);
  const first = await reserve(a1, a);
  t.ok(first.ok, 'the first node admits one hold…');
  t.match(await leaseRows(url), [{ amount: 20 * HOLD }], '…and leases the whole balance (it asked for more)');
  // The other node needs the credit: the first returns its free part; 19 holds are left for the second.
  const second: ReserveResult[] = [];
  for (let i = 0; i < 25; i++) second.push(await reserve(a2, a));
  t.equal(second.filter((r) => r.ok).length, 19, 'the second node admits exactly what the first does not hold');
  t.match(second.at(-1), { ok: false, reason: 'insufficient_credit', available: 0 });
  t.match(await reserve(a1, a), { ok: false, reason: 'insufficient_credit' }, 'and the first admits no more');
  for (const r of [first, ...second]) if (r.ok) (r === first ? a1 : a2).ledger.settle(r.hold.id, HOLD);
  await Promise.all([a1.flush(), a2.flush()]);
  t.same(await a2.ledger.balance(a.accountId), { balance: 0, held: 0, available: 0 }, 'spent to exactly 0');
  t.same(await checkInvariants(a1, { noOpenHolds: true }), []);
});

t.test('300 concurrent reserves on 3 serving nodes against a balance for 20 holds: exactly 20 admitted', { skip }, async (t) => {
  const url = await freshPostgresUrl();
  const all = [await serving(t, url, manual), await serving(t, url, manual), await serving(t, url, manual)];
  const a = await seedAccount(all[0], 20 * HOLD);
  const results = await Promise.all(Array.from({ length: 300 }, (_, i) =>
    Promise.resolve(reserve(all[i % 3], a)).then((r) => ({ r, node: all[i % 3] }))));
  const admitted = results.filter(({ r }) => r.ok);
  t.equal(admitted.length, 20, 'exactly the holds the balance covers');
  t.same(new Set(results.filter(({ r }) => !r.ok).map(({ r }) => !r.ok && r.reason)), new Set(['insufficient_credit']));
  for (const { r, node } of admitted) if (r.ok) node.ledger.settle(r.hold.id, HOLD);
  await Promise.all(all.map((s) => s.flush()));
  t.same(await all[2].ledger.balance(a.accountId), { balance: 0, held: 0, available: 0 }, 'overspend 0');
  t.same(await checkInvariants(all[1], { noOpenHolds: true }), []);
});

t.test('what a node holds of its lease is shown as held on every node', { skip }, async (t) => {
  const url = await freshPostgresUrl();
  const [n1, n2] = [await serving(t, url, manual), await serving(t, url, manual)];
  const a = await seedAccount(n1, 1 * USD);
  const holds = await Promise.all([reserve(n1, a), reserve(n1, a), reserve(n1, a)]);
  t.equal((await n1.ledger.balance(a.accountId)).held, 3 * HOLD, 'on the node holding them, at once');
  await n1.flush();
  t.same(await n2.ledger.balance(a.accountId), { balance: 1 * USD, held: 3 * HOLD, available: 1 * USD - 3 * HOLD }, 'on another, after the batch');
  for (const h of holds) if (h.ok) n1.ledger.settle(h.hold.id, HOLD);
  await n1.flush();
  t.same(await n2.ledger.balance(a.accountId), { balance: 1 * USD - 3 * HOLD, held: 0, available: 1 * USD - 3 * HOLD });
});

t.test('a node that closes returns its leases; a node taken for dead loses them to the sweep and its late ends charge nothing', { skip }, async (t) => {
  const url = await freshPostgresUrl();
  const closing = await serving(t, url, manual);
  const a = await seedAccount(closing, 1 * USD);
  const h = await reserve(closing, a);
  if (h.ok) closing.ledger.settle(h.hold.id, HOLD);
  await closing.close();
  t.same(await leaseRows(url), [], 'a closed node leaves no lease');

  const dying = await serving(t, url, manual);
  const other = await serving(t, url, manual);
  const holds = await Promise.all([reserve(dying, a), reserve(dying, a)]);
  t.ok(holds.every((x) => x.ok));
  const db = await openSql(url);
  t.teardown(() => db.close());
  await db.exec(`UPDATE nodes SET heartbeat_at = heartbeat_at - 3600000 WHERE id = '${dying.nodeId}'`);
  await other.nodes.sweep();
  t.same((await leaseRows(url)).filter((l) => l.node_id === dying.nodeId), [], 'the sweep deleted the silent node\'s lease');
  for (const x of holds) if (x.ok) dying.ledger.settle(x.hold.id, HOLD);
  await dying.flush();
  t.equal(await db.value(`SELECT COUNT(*)::int FROM holds WHERE status = 'released' AND node_id = ?`, dying.nodeId), 2,
    'its holds were written released: their lease was gone');
  t.equal((await other.ledger.balance(a.accountId)).balance, 1 * USD - HOLD, 'nothing charged for them');
  await dying.nodes.heartbeat(); // finds itself taken for dead: a new owner name, no lease
  const again = await reserve(dying, a);
  t.ok(again.ok, 'it admits again, on a new lease');
  t.ok((await leaseRows(url)).some((l) => l.node_id === dying.nodeId && l.owner.endsWith('/1')), 'under its new name');
  if (again.ok) dying.ledger.settle(again.hold.id, HOLD);
  await dying.flush();
  t.same(await checkInvariants(other, { noOpenHolds: true }), []);
});

t.test('a batch written twice (its first commit unconfirmed) charges, spends and returns each once', { skip }, async (t) => {
  const url = await freshPostgresUrl();
  const node = await openPgNode(t, url, manual);
  const a = await seedAccount(node, 1 * USD);
  const db = new Db(url, silentLogger);
  t.teardown(() => db.close());
  await db.query('SELECT * FROM gateway_lease($1, $2, $3, $4, $5)', [a.accountId, 'n/0', node.nodeId, 10 * HOLD, HOLD]);
  const now = Date.now();
  const month = new Date(now).toISOString().slice(0, 7);
  const batch = (): PgBatch => ({
    ...newPgBatch(),
    leasedEnds: [{ id: 'x-1', accountId: a.accountId, keyId: a.keyId, requestId: null, amount: 2 * HOLD, status: 'settled', charged: HOLD,
      createdAt: now, endedAt: now, month, owner: 'n/0' }],
    leaseReports: [{ accountId: a.accountId, owner: 'n/0', returned: 3 * HOLD, seq: 1, inUse: 0 }],
  });
  const run = pgExecutor(db, node.nodeId).run;
  await run(batch());
  await run(batch());
  const sql = await openSql(url);
  t.teardown(() => sql.close());
  t.equal(await sql.value('SELECT amount FROM leases WHERE owner = ?', 'n/0'), 10 * HOLD - HOLD - 3 * HOLD, 'lease less one charge and one return');
  t.equal(await sql.value(`SELECT COUNT(*)::int FROM journal WHERE kind = 'charge'`), 1, 'one charge');
  t.equal((await node.ledger.balance(a.accountId)).balance, 1 * USD - HOLD);
});

/** A transaction on its own connection holding `account`'s balance row until `release` is called. */
async function lockBalance(db: Db, accountId: number): Promise<{ pid: number; release(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let locked!: (pid: number) => void;
  const pid = new Promise<number>((r) => (locked = r));
  const done = db.transaction(async (tx) => {
    const [row] = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid FROM balances WHERE account_id = $1 FOR UPDATE', [accountId]);
    locked(row.pid);
    await released;
  });
  return { pid: await pid, release: () => (release(), done) };
}

t.test('two nodes whose batches end database-admitted and leased holds of two accounts in crossing orders do not deadlock', { skip }, async (t) => {
  const url = await freshPostgresUrl();
  const [nodeA, nodeB] = [await openPgNode(t, url, manual), await openPgNode(t, url, manual)];
  const [x, y] = [await seedAccount(nodeA, 1 * USD), await seedAccount(nodeA, 1 * USD)]; // x.accountId < y.accountId
  const [dbA, dbB, lockers] = [new Db(url, silentLogger), new Db(url, silentLogger), new Db(url, silentLogger)];
  t.teardown(() => Promise.all([dbA.close(), dbB.close(), lockers.close()]));
  const now = Date.now();
  const month = new Date(now).toISOString().slice(0, 7);
  // Node A ends a database-admitted hold of y and a leased one of x; node B the reverse.
  for (const [a, owner, n] of [[x, 'a/0', nodeA], [y, 'b/0', nodeB]] as const) {
    await lockers.query('SELECT * FROM gateway_lease($1, $2, $3, $4, $5)', [a.accountId, owner, n.nodeId, 10 * HOLD, HOLD]);
  }
  for (const [a, id, n] of [[y, 'db-a', nodeA], [x, 'db-b', nodeB]] as const) {
    await lockers.query(`INSERT INTO holds (id, account_id, key_id, amount, status, created_at, node_id) VALUES ($1, $2, $3, $4, 'open', $5, $6)`,
      [id, a.accountId, a.keyId, HOLD, now, n.nodeId]);
  }
  const batch = (dbHold: string, leased: { accountId: number; keyId: number }, owner: string): PgBatch => ({
    ...newPgBatch(),
    ends: [{ id: dbHold, status: 'settled', charged: HOLD, endedAt: now, month }],
    leasedEnds: [{ id: `leased-${owner}`, accountId: leased.accountId, keyId: leased.keyId, requestId: null, amount: HOLD, status: 'settled',
      charged: HOLD, createdAt: now, endedAt: now, month, owner }],
  });
  // Both balance rows are held by other transactions while the two batches start, so each batch
  // waits on the first row it locks; y is let go first, then x.
  const [lockX, lockY] = [await lockBalance(lockers, x.accountId), await lockBalance(lockers, y.accountId)];
  const sql = await openSql(url);
  t.teardown(() => sql.close());
  const waiting = async () => new Map((await sql.all(`SELECT pid, pg_blocking_pids(pid) AS blockers FROM pg_stat_activity
    WHERE datname = current_database() AND wait_event_type = 'Lock'`)).map((r) => [r.pid as number, r.blockers as number[]]));
  const deadlocks = async () => Number(await sql.value('SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()'));
  const deadlocksBefore = await deadlocks();
  const outcome = (p: Promise<void>) => p.then(() => 'committed', (err: Error) => err.message);
  const runA = outcome(pgExecutor(dbA, nodeA.nodeId).run(batch('db-a', x, 'a/0')));
  const pidA = [...(await poll('A waits for a lock', 5000, async () => ((await waiting()).size === 1 ? waiting() : undefined)))!.keys()][0];
  const runB = outcome(pgExecutor(dbB, nodeB.nodeId).run(batch('db-b', y, 'b/0')));
  await poll('B waits for a lock', 5000, async () => (await waiting()).size === 2);
  await lockY.release();
  // A locks y if its first statement took y (charges posted by kind), then waits for x behind B.
  await poll('A waits for x', 5000, async () => {
    const blockers = (await waiting()).get(pidA);
    return blockers !== undefined && !blockers.includes(lockY.pid);
  });
  await lockX.release();
  t.same(await Promise.all([runA, runB]), ['committed', 'committed'], 'both batches commit, neither aborted as a deadlock');
  t.equal(await deadlocks(), deadlocksBefore, 'PostgreSQL found no deadlock');
  for (const a of [x, y]) t.equal((await nodeA.ledger.balance(a.accountId)).balance, 1 * USD - 2 * HOLD, 'each account charged both its holds');
  // Written again (as after an unconfirmed commit): nothing is posted twice.
  await pgExecutor(dbA, nodeA.nodeId).run(batch('db-a', x, 'a/0'));
  await pgExecutor(dbB, nodeB.nodeId).run(batch('db-b', y, 'b/0'));
  for (const a of [x, y]) t.equal((await nodeA.ledger.balance(a.accountId)).balance, 1 * USD - 2 * HOLD, 'written twice, charged once');
  t.equal(await sql.value(`SELECT COUNT(*)::int FROM journal WHERE kind = 'charge'`), 4, 'one charge a hold');
  t.same(await checkInvariants(url, { noOpenHolds: true }), []);
});

t.test('a node that stops hearing the lease channel returns its free lease and admits through the database', { skip }, async (t) => {
  const url = await freshPostgresUrl();
  const node = await serving(t, url, { ...manual, listenerTimings: { reconnectMinMs: 3_600_000, reconnectMaxMs: 3_600_000 } });
  const ledger = node.ledger as import('../../../lib/store/postgres/ledger.js').PgLedger;
  const a = await seedAccount(node, 1 * USD);
  const held = await reserve(node, a);
  t.ok(held.ok);
  t.equal(ledger.groups.calls, 0, 'admitted on a lease');
  const db = await openSql(url);
  t.teardown(() => db.close());
  await db.exec(`SELECT pg_terminate_backend(${node.listener!.pid})`);
  await until('the listener noticed', () => !node.listener!.listening, 5000);
  await node.flush();
  t.match(await leaseRows(url), [{ amount: HOLD, in_use: HOLD }], 'only what its request holds is still leased');
  t.ok((await reserve(node, a)).ok, 'the next request is admitted…');
  t.equal(ledger.groups.calls, 1, '…by the database');
});
