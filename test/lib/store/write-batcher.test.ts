// The group commit's cadence around a batch slower than the interval (a loaded writer thread, a slow
// database): no flush queues up behind it, and the rows queued meanwhile leave in one batch as soon
// as it ends.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { KeyedRows, WriteBatcher } from '../../../lib/store/write-batcher.js';
import { until } from '../../helpers/until.js';

const INTERVAL_MS = 5;

/** A batcher whose batches stay in flight until `release()`; `batches`: each batch's row count. */
function heldBatches() {
  const batches: number[] = [];
  let resolveLast = () => {};
  const batcher = new WriteBatcher<{ rows: number }>(
    { run: (b) => new Promise<void>((resolve) => { batches.push(b.rows); resolveLast = resolve; }) },
    () => ({ rows: 0 }),
    INTERVAL_MS,
  );
  const rows = new KeyedRows<{ rows: number }, number, string>(batcher, (b) => b.rows++);
  return { batcher, rows, batches, release: () => resolveLast() };
}

t.test('a batch in flight for ten intervals: no flush waits behind it; the rows queued meanwhile go in the next batch, at once', async (t) => {
  const { batcher, rows, batches, release } = heldBatches();
  let flushes = 0;
  const flush = batcher.flush.bind(batcher);
  batcher.flush = () => (flushes++, flush());

  rows.set(0, 'first');
  await until('the first batch starts', () => batches.length === 1, 5000);
  const flushesBefore = flushes;
  // Ten intervals pass while it is written, a row queued in each.
  for (let i = 1; i <= 10; i++) {
    rows.set(i, 'meanwhile');
    await sleep(INTERVAL_MS);
  }
  t.equal(flushes, flushesBefore, 'no flush started while the batch was in flight');
  t.equal(batches.length, 1);

  release();
  await until('the next batch starts', () => batches.length === 2, 5000);
  t.equal(batches[1], 10, 'the ten rows queued meanwhile, in one batch');
  release();
  await batcher.close();
  t.equal(batches.length, 2, 'nothing else was queued');
});

t.test('rows queued during a quick batch wait out the interval from its start', async (t) => {
  const startedAt: number[] = [];
  const batcher = new WriteBatcher<object>({ run: () => (startedAt.push(performance.now()), sleep(10)) }, () => ({}), 50);
  const rows = new KeyedRows<object, number, string>(batcher, () => {});
  rows.set(0, 'a');
  await until('the first batch', () => startedAt.length === 1, 5000);
  rows.set(1, 'b'); // while the first is written
  await until('the second batch', () => startedAt.length === 2, 5000);
  t.ok(startedAt[1] - startedAt[0] >= 45, `about one interval apart (${(startedAt[1] - startedAt[0]).toFixed(1)} ms)`);
  await batcher.close();
});

t.test('close() also writes the rows queued while its batch is written, before it resolves', async (t) => {
  const { batcher, rows, batches, release } = heldBatches();
  rows.set(0, 'before');
  const closed = batcher.close().then(() => batches.length); // the batches started when it resolved
  await until('the closing batch starts', () => batches.length === 1, 5000);
  rows.set(1, 'while closing'); // a request's last row, say
  release();
  await until('the next batch starts', () => batches.length === 2, 5000);
  release();
  t.equal(await closed, 2, 'close() resolved after the second batch');
  t.same(batches, [1, 1], 'one row in each');
  t.equal(batcher.unwritten(), 0);
});
