// When the database refuses or stalls writes, the rows wait in memory: bounded, never a money row
// lost, and the gateway takes no new holds until they are written.
import t, { type Test } from 'tap';
import type { LogLevel } from '../../../lib/log.js';
import { retryDelayMs } from '../../../lib/store/write-batcher.js';
import { checkInvariants } from '../../helpers/invariants.js';
import { openSql } from '../../helpers/sql.js';
import { backends, freshStore, historyRow, poisonHistory, seedAccount, type Backend } from './fixtures/store.js';

const USD = 1_000_000_000;
/** Each request below queues three rows: its hold, its charge and its history row. */
const BOUND = 9;

async function setup(t: Test, backend: Backend) {
  const logged: { level: LogLevel; msg: string; fields?: Record<string, unknown> }[] = [];
  const ts = await freshStore(t, backend, { maxUnwrittenRows: BOUND, log: (level, msg, fields) => logged.push({ level, msg, fields }) });
  const a = await seedAccount(ts.store, 10 * USD);
  const other = await openSql(ts.dbPath);
  t.teardown(() => other.close());
  let n = 0;
  /** One request's worth of rows: a hold settled for 1 USD and a history row. Returns the reserve's answer. */
  const request = async () => {
    const id = `req-${n++}`;
    const r = await ts.store.ledger.reserve({ accountId: a.accountId, keyId: a.keyId, amount: 2 * USD, monthlyLimitNano: null, requestId: id });
    if (r.ok) await ts.store.ledger.settle(r.hold.id, 1 * USD);
    ts.store.history.record(historyRow(a, id));
    return r;
  };
  const count = (sql: string) => other.value(sql) as Promise<number>;
  const messages = (part: string) => logged.filter((l) => l.msg.includes(part));
  return { ...ts, a, other, request, count, messages };
}

backends(t, 'while batches fail, rows wait; past the bound new holds are refused, past twice it history rows are dropped; then all is written once', async (t, backend) => {
  const s = await setup(t, backend);
  await poisonHistory(s.other);
  for (let i = 0; i < 3; i++) {
    t.match(await s.request(), { ok: true }, `request ${i} admitted below the bound`);
    await t.rejects(s.store.flush(), /injected failure/);
  }
  t.match(await s.request(), { ok: false, reason: 'store_backlogged' }, 'refused at the bound: 9 rows wait');
  t.equal((await s.store.ledger.balance(s.a.accountId)).held, 0, 'the refused request holds nothing');
  // Refused requests still get their history rows, up to twice the bound; the rest are dropped.
  for (let i = 0; i < 12; i++) t.match(await s.request(), { ok: false, reason: 'store_backlogged' });
  t.ok(await s.store.history.get('req-11'), 'a history row under twice the bound waits with the others');
  t.equal(await s.store.history.get('req-12'), null, 'past twice the bound (18 rows) a history row is dropped');
  await t.rejects(s.store.flush(), /injected failure/);

  t.equal(s.messages('a batch write failed').length, 1, 'the failure is logged once, not per attempt');
  t.equal(s.messages('still failing').length, 0, 'nor again within 10 s');
  t.equal(s.messages('new requests get 503').length, 1);
  t.equal(s.messages('history rows are being dropped').length, 1);

  await s.other.exec('DELETE FROM poison');
  await s.store.flush();
  t.equal(await s.count(`SELECT COUNT(*) FROM journal WHERE kind = 'charge'`), 3, 'each admitted request charged once');
  t.equal(await s.count('SELECT COUNT(*) FROM request_history'), 12, 'every history row kept, once');
  t.equal((await s.store.ledger.balance(s.a.accountId)).balance, 7 * USD);
  t.match(s.messages('written after a backlog'), [{ level: 'info', fields: { dropped_rows: 4, unwritten: 0 } }]);
  t.match(s.messages('written after a backlog')[0].fields, { failed_attempts: Number });

  t.match(await s.request(), { ok: true }, 'admitted again once the rows are written');
  t.equal(s.messages('requests are admitted').length, 1);
  await s.store.flush();
  t.same(await checkInvariants(s.store, { noOpenHolds: true }), []);
});

backends(t, 'a stalled write (another connection holds the lock) counts too: refused at the bound, admitted once it commits', async (t, backend) => {
  const s = await setup(t, backend);
  // The writer's next transaction waits for this lock.
  await s.other.exec(backend === 'sqlite' ? 'BEGIN IMMEDIATE' : 'BEGIN; LOCK TABLE request_history IN EXCLUSIVE MODE');
  for (let i = 0; i < 3; i++) t.match(await s.request(), { ok: true });
  const stalled = s.store.flush(); // takes the 9 rows at once: in flight, while the writer waits for the lock
  t.match(await s.request(), { ok: false, reason: 'store_backlogged' }, 'rows in flight count');
  await s.other.exec('COMMIT');
  await stalled;
  await s.store.flush();
  t.match(await s.request(), { ok: true });
  await s.store.flush();
  t.equal(await s.count(`SELECT COUNT(*) FROM journal WHERE kind = 'charge'`), 4);
  t.equal(await s.count('SELECT COUNT(*) FROM request_history'), 5);
  t.same(s.messages('a batch write failed'), [], 'a stall that ends within the busy timeout is no failure');
  t.same(await checkInvariants(s.store, { noOpenHolds: true }), []);
});

t.test('failed batches are retried after the commit interval doubled per failure, at most a second apart', async (t) => {
  t.equal(retryDelayMs(20, 0), 20);
  t.equal(retryDelayMs(20, 1), 40);
  t.equal(retryDelayMs(20, 5), 640);
  t.equal(retryDelayMs(20, 6), 1000);
  t.equal(retryDelayMs(20, 1e6), 1000, 'no overflow after many failures');
  t.equal(retryDelayMs(2000, 3), 2000, 'never sooner than the commit interval');
});
