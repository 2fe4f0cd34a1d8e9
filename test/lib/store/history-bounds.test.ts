// History that no key can grow without bound: refusals past a key's first few in a minute are
// counted in one summary row per key and minute, and rows past the retention are deleted in the
// background, a bounded number per batch.
import t from 'tap';
import { REFUSALS_RECORDED_PER_MINUTE } from '../../../lib/store/refusal-counts.js';
import type { QueuedHistory } from '../../../lib/store/queued-history.js';
import { openSql } from '../../helpers/sql.js';
import type { HistoryRow } from '../../../lib/store/types.js';
import { backends, freshStore, historyRow, seedAccount } from './fixtures/store.js';

const MINUTE = 60_000;
const DAY = 86_400_000;

const refusal = (a: { accountId: number; keyId: number }, i: number, time: number): HistoryRow => ({
  ...historyRow(a, `req_refused_${a.keyId}_${i}_${time}`), time, status: 'error', httpStatus: 400, usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 },
  error: 'Invalid JSON body',
});

backends(t, 'a key\'s refusals past the first few of a minute are counted in one summary row', async (t, backend) => {
  const { store, dbPath } = await freshStore(t, backend);
  const a = await seedAccount(store, 0);
  const b = await seedAccount(store, 0);
  const minute = Math.floor(Date.now() / MINUTE) * MINUTE;
  const N = REFUSALS_RECORDED_PER_MINUTE;

  for (let i = 0; i < N + 5; i++) store.history.recordRefusal(refusal(a, i, minute + i));
  for (let i = 0; i < 3; i++) store.history.recordRefusal(refusal(b, i, minute + i));
  t.equal(store.history.refusalsNotRecorded(), 5, 'the store counts what it did not record (for metrics)');

  // Queued: the reads already show the summary.
  const queued = await store.history.list(a.accountId, { limit: 100 });
  t.equal(queued.length, N + 1, 'the first N in full, then one summary');
  const summary = queued.find((r) => r.notRecorded !== undefined)!;
  t.match(summary, { notRecorded: 5, status: 'error', time: minute + N, keyId: a.keyId, error: '5 more refused requests of this key in this minute not recorded' });
  t.equal((await store.history.list(b.accountId, { limit: 100 })).length, 3, 'another key has its own allowance');

  await store.flush();
  for (let i = N + 5; i < N + 12; i++) store.history.recordRefusal(refusal(a, i, minute + i));
  t.match(await store.history.get(summary.requestId), { notRecorded: 12 }, 'queued counts add to the written ones');
  await store.flush();
  t.match(await store.history.get(summary.requestId), { notRecorded: 12, error: '12 more refused requests of this key in this minute not recorded' });
  t.equal((await store.history.list(a.accountId, { limit: 100 })).length, N + 1, 'still one summary row');
  const days = await store.history.daily(a.accountId, minute - DAY, minute + DAY);
  t.equal(days.reduce((n, d) => n + d.requests, 0), N + 12, 'requests per day count the refusals not recorded');

  // The next minute has its own allowance and its own summary.
  for (let i = 0; i < N + 1; i++) store.history.recordRefusal(refusal(a, i, minute + MINUTE + i));
  await store.flush();
  const db = await openSql(dbPath, { readonly: true });
  t.teardown(() => db.close());
  t.same(await db.get('SELECT COUNT(*) AS rows, SUM(not_recorded) AS counted FROM request_history WHERE key_id = ?', a.keyId),
    { rows: 2 * N + 2, counted: 13 });
});

backends(t, 'ten thousand refusals of one key in a minute: a bounded number of rows', async (t, backend) => {
  const { store, dbPath } = await freshStore(t, backend);
  const a = await seedAccount(store, 0);
  const minute = Math.floor(Date.now() / MINUTE) * MINUTE;
  for (let i = 0; i < 10_000; i++) {
    store.history.recordRefusal(refusal(a, i, minute + (i % MINUTE)));
    if (i % 1000 === 999) await store.flush();
  }
  store.history.record(historyRow(a, 'req_served')); // a request that reached an upstream is always recorded
  await store.flush();
  const db = await openSql(dbPath, { readonly: true });
  t.teardown(() => db.close());
  t.same(await db.get('SELECT COUNT(*) AS rows, SUM(not_recorded) AS counted FROM request_history'),
    { rows: REFUSALS_RECORDED_PER_MINUTE + 2, counted: 10_000 - REFUSALS_RECORDED_PER_MINUTE });
});

backends(t, 'history past its retention is deleted in bounded batches, oldest first, summary rows included', async (t, backend) => {
  const now = Date.UTC(2026, 10, 25, 12);
  const { store, dbPath } = await freshStore(t, backend, { clock: () => now });
  const a = await seedAccount(store, 0);
  const old = now - 91 * DAY;
  for (let i = 0; i < 4500; i++) store.history.record({ ...historyRow(a, `req_old_${String(i).padStart(5, '0')}`), time: old + i });
  for (let i = 0; i < REFUSALS_RECORDED_PER_MINUTE + 3; i++) store.history.recordRefusal(refusal(a, i, old + 5000));
  for (let i = 0; i < 10; i++) store.history.record({ ...historyRow(a, `req_new_${i}`), time: now - 89 * DAY + i });
  await store.flush();
  const db = await openSql(dbPath, { readonly: true });
  t.teardown(() => db.close());
  const count = () => db.value('SELECT COUNT(*) FROM request_history') as Promise<number>;
  const total = 4500 + REFUSALS_RECORDED_PER_MINUTE + 1 + 10;
  t.equal(await count(), total);

  const history = store.history as QueuedHistory<unknown>;
  await history.startPruning(90 * DAY, () => now); // checks at once, then every second
  history.stopPruning(); // the test drives the checks itself
  const remaining: number[] = [];
  for (let round = 0; round < 5; round++) {
    await store.flush();
    remaining.push(await count());
    await history.checkRetention(90 * DAY, () => now);
  }
  t.same(remaining, [total - 2000, total - 4000, 10, 10, 10], 'at most 2000 rows per batch, until only rows within the retention are left');
  t.same((await db.all('SELECT request_id FROM request_history ORDER BY time')).map((r) => r.request_id), Array.from({ length: 10 }, (_, i) => `req_new_${i}`));
});
