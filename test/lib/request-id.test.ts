// Request ids: format, uniqueness, order by time as text, monotonic within one millisecond and
// when the clock steps back, and the requestIdTime round trip.
// The generator keeps module state (the last millisecond), so the subtests run in time order.
import t from 'tap';
import { newRequestId, requestIdTime } from '../../lib/request-id.js';

const FORMAT = /^req_[0-9A-HJKMNP-TV-Z]{26}$/;

t.test('format and the real clock', async (t) => {
  const before = Date.now();
  const id = newRequestId();
  const after = Date.now();
  t.match(id, FORMAT);
  const ms = requestIdTime(id);
  t.ok(ms >= before && ms <= after, `time ${ms} within [${before}, ${after}]`);
});

t.test('unique and strictly increasing as text over many ids', async (t) => {
  const ids: string[] = [];
  for (let i = 0; i < 10_000; i++) ids.push(newRequestId());
  t.equal(new Set(ids).size, ids.length, 'no duplicates');
  let unordered = 0;
  for (let i = 1; i < ids.length; i++) if (!(ids[i - 1] < ids[i])) unordered++;
  t.equal(unordered, 0, 'each id sorts after the previous one');
  t.ok(ids.every((id) => FORMAT.test(id)));
});

t.test('monotonic within the same millisecond', async (t) => {
  const now = Date.now() + 1000;
  const ids = Array.from({ length: 1000 }, () => newRequestId(now));
  for (let i = 1; i < ids.length; i++) {
    if (!(ids[i - 1] < ids[i])) {
      t.fail(`${ids[i - 1]} !< ${ids[i]}`);
      break;
    }
  }
  t.ok(ids.every((id) => requestIdTime(id) === now), 'all carry the same millisecond');
  t.equal(new Set(ids.map((id) => id.slice(4, 14))).size, 1, 'same time prefix');
});

t.test('sortable by time as text across milliseconds', async (t) => {
  const base = Date.now() + 10_000;
  // Later times sort later even when the random part would say otherwise.
  const times = [base, base + 1, base + 31, base + 32, base + 1023, base + 1024, base + 86_400_000];
  const ids = times.map((ms) => newRequestId(ms));
  t.same([...ids].sort(), ids);
  t.same(ids.map(requestIdTime), times, 'requestIdTime round trip');
});

t.test('a clock that steps back never breaks the order', async (t) => {
  const base = Date.now() + 100_000_000;
  const first = newRequestId(base);
  const second = newRequestId(base - 5000);
  t.ok(first < second, 'still increasing');
  t.equal(requestIdTime(second), base, 'keeps the latest millisecond seen');
});

t.test('requestIdTime round trip over the whole 48-bit range (run last: moves the clock far ahead)', async (t) => {
  const start = Date.now() + 200_000_000;
  const times = [start, start + 123_456_789, 2 ** 41 + 17, 2 ** 47 + 5, 2 ** 48 - 2, 2 ** 48 - 1];
  for (const ms of times) {
    const id = newRequestId(ms);
    t.match(id, FORMAT);
    t.equal(requestIdTime(id), ms, `ms ${ms}`);
  }
});
