// What the write batcher tells readiness and metrics: why new requests should not come (a batch
// failed, the backlog reached its bound), and each batch's commit time or failure.
import t from 'tap';
import { KeyedRows, WriteBatcher } from '../../../lib/store/write-batcher.js';

t.test('problem() names failing batches and a backlog at its bound; the observer hears every batch', async (t) => {
  let failing = false;
  const batcher = new WriteBatcher<object>({ run: async () => { if (failing) throw new Error('disk full'); } }, () => ({}), 60_000, { maxUnwrittenRows: 3 });
  const rows = new KeyedRows<object, number, string>(batcher, () => {});
  const heard = { committed: [] as number[], failed: 0 };
  batcher.observe({ committed: (s) => heard.committed.push(s), failed: () => heard.failed++ });
  t.equal(batcher.problem(), null);

  rows.set(1, 'a');
  failing = true;
  await t.rejects(batcher.flush(), /disk full/);
  t.equal(batcher.problem(), 'store writes failing: 1 failed batches in a row');
  t.equal(heard.failed, 1);

  rows.set(2, 'b');
  rows.set(3, 'c');
  t.match(batcher.problem(), /^store backlogged: 3 rows wait to be written \(bound 3\)$/, 'the backlog is named first');

  failing = false;
  await batcher.flush();
  t.equal(batcher.problem(), null, 'written: nothing in the way');
  t.equal(heard.committed.length, 1);
  t.ok(heard.committed[0] >= 0 && heard.committed[0] < 1, 'commit time in seconds');
  await batcher.close();
});
