// The history's search, filters, totals and paging both ways, on both databases: a request id found
// by its prefix, rows of one key or route, sums over the whole filtered view, and pages that meet
// whether the rows are written or still queued.
import t from 'tap';
import type { HistoryRow } from '../../../lib/store/types.js';
import { backends, freshStore, historyRow, seedAccount } from './fixtures/store.js';

const T0 = Date.UTC(2026, 10, 1);
/** ULID-like ids (Crockford letters and digits), in time order like the gateway's. */
const id = (i: number, tail = 'ABCDEFGHJKMNPQRSTV') => `req_01JD${String(i).padStart(4, '0')}${tail}`;

backends(t, 'history: id prefix search, key and route filters, totals, paging both ways', async (t, backend) => {
  const { store } = await freshStore(t, backend, { commitIntervalMs: 60_000 });
  const a = await seedAccount(store, 0);
  const other = await seedAccount(store, 0);
  const rows: HistoryRow[] = [];
  for (let i = 0; i < 30; i++) {
    rows.push({
      ...historyRow(a, id(i)), time: T0 + i * 1000, keyId: i % 3 === 0 ? a.keyId + 1000 : a.keyId, route: i % 2 ? 'messages' : 'chat',
      usage: { input: 10, output: 2, cacheRead: 1, cacheWrite: 0, cacheWrite1h: 0 }, costNano: 1000 + i,
    });
  }
  // Written: the first 20; still queued: the last 10 (reads merge both).
  for (const r of rows.slice(0, 20)) store.history.record(r);
  await store.flush();
  for (const r of rows.slice(20)) store.history.record(r);
  store.history.record({ ...historyRow(other, 'req_01JD0005ZZZZZZZZZZZZZZZZZZ'), time: T0 });

  const ids = async (q: Parameters<typeof store.history.list>[1]) => (await store.history.list(a.accountId, q)).map((r) => r.requestId);
  t.same(await ids({ idPrefix: id(7), limit: 10 }), [id(7)], 'a whole id');
  t.same(await ids({ idPrefix: 'req_01JD002', limit: 50 }), [id(29), id(28), id(27), id(26), id(25), id(24), id(23), id(22), id(21), id(20)],
    'a prefix: written and queued rows, newest first');
  t.same(await ids({ idPrefix: 'req_01JD001', limit: 3 }), [id(19), id(18), id(17)], 'a prefix, limited');
  t.same(await ids({ idPrefix: 'req_01JD0005', limit: 10 }), [id(5)], 'another account\'s row with that prefix is not listed');
  t.same(await ids({ idPrefix: 'req_01JE', limit: 10 }), [], 'no match');
  t.same(await ids({ idPrefix: 'req_01jd0005', limit: 10 }), [], 'the store matches exactly (the caller normalises case)');

  t.same(await ids({ keyId: a.keyId + 1000, route: 'chat', limit: 50 }), [id(24), id(18), id(12), id(6), id(0)], 'by key and route');

  const expect = (picked: HistoryRow[]) => ({
    rows: picked.length, requests: picked.length, inputTokens: picked.length * 11, outputTokens: picked.length * 2,
    costNano: picked.reduce((s, r) => s + r.costNano, 0),
  });
  t.same(await store.history.totals(a.accountId), expect(rows), 'totals of everything, written and queued');
  t.same(await store.history.totals(a.accountId, { route: 'messages', limit: 1 }), expect(rows.filter((r) => r.route === 'messages')),
    'totals of a filter, its limit left aside');
  t.same(await store.history.totals(a.accountId, { idPrefix: 'req_01JD001' }), expect(rows.slice(10, 20)), 'totals of an id search');
  t.same(await store.history.totals(a.accountId, { from: T0 + 25_000 }), expect(rows.slice(25)), 'totals of a period');
  t.same(await store.history.totals(other.accountId, { keyId: a.keyId }), expect([]), 'nothing matches: zeros');

  // Paging: older with `after`, back with `before`, the same pages either way.
  const page1 = await store.history.list(a.accountId, { limit: 12 });
  const page2 = await store.history.list(a.accountId, { limit: 12, after: page1.at(-1)! });
  t.same(page2.map((r) => r.requestId), rows.slice(6, 18).reverse().map((r) => r.requestId), 'older page');
  const back = await store.history.list(a.accountId, { limit: 12, before: page2[0] });
  t.same(back.map((r) => r.requestId), page1.map((r) => r.requestId), 'the newer page again, newest first');
  const page3 = await store.history.list(a.accountId, { limit: 12, after: page2.at(-1)! });
  t.same((await store.history.list(a.accountId, { limit: 12, before: page3[0] })).map((r) => r.requestId), page2.map((r) => r.requestId),
    'back from the last page (written rows only)');
  t.equal((await store.history.totals(a.accountId, { before: page2[0] })).rows, 12, 'rows newer than a page: its position');

  // Per key and per model (the spend breakdown of the overview), written and queued rows added up.
  store.history.record({ ...historyRow(a, 'req_01JD9999ABCDEFGHJKMNPQRSTV'), time: T0 + 40_000, model: null, costNano: 5 });
  const byKey = await store.history.totalsBy(a.accountId, 'keyId', { from: T0 });
  const ofKey = (k: number) => rows.filter((r) => r.keyId === k);
  t.same(byKey, [
    { group: a.keyId, ...expect(ofKey(a.keyId)), rows: 21, requests: 21, inputTokens: 20 * 11 + 1, outputTokens: 20 * 2 + 1, costNano: expect(ofKey(a.keyId)).costNano + 5 },
    { group: a.keyId + 1000, ...expect(ofKey(a.keyId + 1000)) },
  ], 'per key, the largest spend first');
  const byModel = await store.history.totalsBy(a.accountId, 'model', { from: T0, to: T0 + 30_000 });
  t.same(byModel, [{ group: 'test/gpt', ...expect(rows) }], 'per model, in a period');
  t.same((await store.history.totalsBy(a.accountId, 'model')).map((g) => [g.group, g.costNano]), [['test/gpt', expect(rows).costNano], [null, 5]],
    'a row without a model is its own group');
});
