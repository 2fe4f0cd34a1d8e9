import t, { type Test } from 'tap';
import { join } from 'node:path';
import { BATCH_SQL, batchWriter, newBatch, type Batch } from '../../../lib/store/sqlite/batch.js';
import { openDatabase, type Db } from '../../../lib/store/sqlite/open.js';
import { tempDir } from './fixtures/store.js';

/** A migrated database with one account and one key, and a batch writer on it. */
function setup(t: Test): { db: Db; write: (b: Batch) => void } {
  const db = openDatabase(join(tempDir(t), 'gateway.db'));
  t.teardown(() => db.close());
  db.prepare(`INSERT INTO accounts (id, email, created_at) VALUES (1, 'a@b.c', 0)`).run();
  db.prepare(`INSERT INTO api_keys (id, account_id, name, prefix, hash, created_at) VALUES (7, 1, 'k', 'sk-service-ab', x'00', 0)`).run();
  return { db, write: batchWriter(db, BATCH_SQL) };
}

/** `n` settled holds with their charges and history rows; row i carries amounts derived from i. */
function rows(batch: Batch, n: number, from = 0): void {
  for (let i = from; i < from + n; i++) {
    const id = `h${String(i).padStart(5, '0')}`;
    batch.insertHold.push(id, 1, 7, `req_${i}`, 100 + i, 'settled', i, 1000 + i, 2000 + i, 1, 'token');
    batch.insertCharge.push(1, 7, -i - 1, id, 2000 + i);
    batch.insertHistory.push(`req_${i}`, 1000 + i, 1, 7, 'chat', 'm', 'm@p', '[]', 'ok', 200, 0, i, 2 * i, 0, 0, 0, 100 + i, i, 5, 1, null, null);
  }
}

t.test('every row of a batch is written, in order, whatever its size against the multi-row chunks', async (t) => {
  for (const n of [0, 1, 2, 3, 63, 64, 65, 127, 200]) {
    const { db, write } = setup(t);
    const batch = newBatch();
    rows(batch, n);
    batch.addBalance.push(1, 5000);
    batch.touchKey.push(42, 7);
    write(batch);
    const holds = db.prepare('SELECT id, amount, charged FROM holds ORDER BY id').all() as { id: string; amount: number; charged: number }[];
    t.same(holds.map((h) => h.amount), Array.from({ length: n }, (_, i) => 100 + i), `${n} rows: holds`);
    t.same(holds.map((h) => h.charged), Array.from({ length: n }, (_, i) => i), `${n} rows: each hold's own values`);
    // The journal's ids follow the batch's order.
    const charges = db.prepare(`SELECT hold_id, amount FROM journal WHERE kind = 'charge' ORDER BY id`).all() as { hold_id: string; amount: number }[];
    t.same(charges.map((c) => [c.hold_id, c.amount]), holds.map((h, i) => [h.id, -i - 1]), `${n} rows: charges in order`);
    const history = db.prepare('SELECT request_id, output_tokens FROM request_history ORDER BY time').all() as { request_id: string; output_tokens: number }[];
    t.same(history.map((h) => [h.request_id, h.output_tokens]), Array.from({ length: n }, (_, i) => [`req_${i}`, 2 * i]), `${n} rows: history`);
    t.equal(db.prepare('SELECT balance FROM balances WHERE account_id = 1').pluck().get(), 5000, 'one-row statements too');
    t.equal(db.prepare('SELECT last_used_at FROM api_keys WHERE id = 7').pluck().get(), 42);
  }
});

t.test('a batch that fails writes nothing: its transaction rolls back', async (t) => {
  const { db, write } = setup(t);
  const batch = newBatch();
  rows(batch, 70);
  // A charge of a hold that does not exist, in the second chunk: the foreign key refuses it.
  batch.insertCharge.push(1, 7, -1, 'no-such-hold', 0);
  t.throws(() => write(batch), /FOREIGN KEY/);
  const count = (table: string) => db.prepare(`SELECT COUNT(*) FROM ${table}`).pluck().get();
  t.same([count('holds'), count('journal'), count('request_history')], [0, 0, 0]);

  const ragged = newBatch();
  rows(ragged, 3);
  ragged.insertHistory.pop();
  t.throws(() => write(ragged), /insertHistory: 65 parameters for rows of 22/, 'a part that queued a partial row is caught');
  t.same([count('holds'), count('journal')], [0, 0]);
});

t.test('a duplicated request id in the history is ignored, not a failed batch', async (t) => {
  const { db, write } = setup(t);
  const batch = newBatch();
  rows(batch, 2);
  batch.insertHistory.push(...batch.insertHistory.slice(0, 22));
  write(batch);
  t.equal(db.prepare('SELECT COUNT(*) FROM request_history').pluck().get(), 2);
});
