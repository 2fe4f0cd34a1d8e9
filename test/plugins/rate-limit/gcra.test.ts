// The limiter's arithmetic on an explicit clock (every call takes `now`): no sleeps.
import t from 'tap';
import { KeyLimiter, WINDOW_MS, admit, correct, goDuration, nodeShare, remaining, resetMs, type KeyWindows } from '../../../plugins/rate-limit/gcra.js';

const fresh = (): KeyWindows => ({ requests: -Infinity, tokens: -Infinity });

t.test('a full minute of requests may come at once; the next waits for one interval', async (t) => {
  const w = fresh();
  const now = 1_000_000;
  for (let i = 0; i < 600; i++) if (admit(w, 'requests', 600, 1, now) !== 0) t.fail(`request ${i + 1} refused`);
  t.equal(remaining(w, 'requests', 600, now), 0);
  t.equal(resetMs(w, 'requests', now), WINDOW_MS, 'the whole allowance is back a minute later');
  t.equal(admit(w, 'requests', 600, 1, now), 100, '601st: wait one interval (60 s / 600)');
  t.equal(admit(w, 'requests', 600, 1, now + 99), 1, 'still 1 ms early');
  t.equal(admit(w, 'requests', 600, 1, now + 100), 0, 'admitted once the interval passed');
  t.equal(admit(w, 'requests', 600, 1, now + 100), 100, 'a refused request is not counted');
});

t.test('the allowance refills continuously, not at a window edge', async (t) => {
  const w = fresh();
  t.equal(admit(w, 'requests', 60, 60, 0), 0);
  t.equal(remaining(w, 'requests', 60, 0), 0);
  t.equal(remaining(w, 'requests', 60, 30_000), 30, 'half a minute later: half the allowance');
  t.equal(remaining(w, 'requests', 60, 59_999), 59);
  t.equal(remaining(w, 'requests', 60, 60_000), 60);
  t.equal(remaining(w, 'requests', 60, 10 * WINDOW_MS), 60, 'never more than the limit');
  t.equal(resetMs(w, 'requests', 45_000), 15_000);
  t.equal(resetMs(w, 'requests', 70_000), 0);
});

t.test('limits that do not divide a minute evenly admit exactly the limit', async (t) => {
  for (const limit of [7, 13, 599, 999_983]) {
    const w = fresh();
    let admitted = 0;
    while (admit(w, 'requests', limit, 1, 5) === 0 && admitted <= limit) admitted++;
    t.equal(admitted, limit, `${limit} per minute`);
  }
});

t.test('tokens: a cost is admitted whole or not at all; the two limits are independent', async (t) => {
  const w = fresh();
  t.equal(admit(w, 'tokens', 1000, 600, 0), 0);
  t.equal(remaining(w, 'tokens', 1000, 0), 400);
  t.equal(admit(w, 'tokens', 1000, 500, 0), 6000, '100 tokens short: 100 × 60 ms');
  t.equal(remaining(w, 'tokens', 1000, 0), 400, 'the refused cost took nothing');
  t.equal(admit(w, 'tokens', 1000, 400, 0), 0);
  t.equal(remaining(w, 'requests', 5, 0), 5);
  t.equal(admit(w, 'tokens', 1000, 1001, 1e9), 60, 'more than a minute\'s worth never fits: its wait is never 0');
});

t.test('correction: unused tokens come back while their admission is outstanding, extra use is added', async (t) => {
  const w = fresh();
  t.equal(admit(w, 'tokens', 1000, 800, 0), 0);
  const until = w.tokens;
  correct(w, 'tokens', 1000, 100 - 800, until, 1000);
  t.equal(remaining(w, 'tokens', 1000, 1000), 916, 'used 100 of 800: 1000 − 100 + the 16 refilled in a second');

  const over = fresh();
  admit(over, 'tokens', 1000, 100, 0);
  correct(over, 'tokens', 1000, 400, over.tokens, 0);
  t.equal(remaining(over, 'tokens', 1000, 0), 500, 'used 500 where 100 were estimated');

  // A long request: its admission was paid off long ago, so its unused part is not handed to others.
  const late = fresh();
  admit(late, 'tokens', 1000, 1000, 0);
  const lateUntil = late.tokens;
  t.equal(admit(late, 'tokens', 1000, 1000, 120_000), 0, 'another request, two minutes later');
  correct(late, 'tokens', 1000, -1000, lateUntil, 120_000);
  t.equal(remaining(late, 'tokens', 1000, 120_000), 0, 'the other request\'s debt stands');

  // Half of the admission still outstanding: at most that half comes back.
  const half = fresh();
  admit(half, 'tokens', 1000, 1000, 0);
  correct(half, 'tokens', 1000, -1000, half.tokens, 30_000);
  t.equal(remaining(half, 'tokens', 1000, 30_000), 1000);
});

t.test('KeyLimiter: one state per key, bounded', async (t) => {
  const l = new KeyLimiter(2);
  const a = l.windows(1);
  t.equal(l.windows(1), a, 'the same object each time: no allocation per request');
  admit(a, 'requests', 1, 1, 0);
  l.windows(2);
  l.windows(3);
  t.equal(l.peek(1), undefined, 'the least recently used key is forgotten past the bound');
  t.equal(remaining(l.windows(1), 'requests', 1, 0), 1);
});

t.test('OpenAI / Go duration notation', async (t) => {
  const cases: [number, string][] = [
    [0, '0s'], [-5, '0s'], [0.2, '1ms'], [12, '12ms'], [30_000.000000004, '30s'], [999.5, '1s'], [1000, '1s'], [1500, '1.5s'],
    [8640, '8.64s'], [60_000, '1m0s'], [360_000, '6m0s'], [90_500, '1m30.5s'], [3_600_000, '1h0m0s'],
  ];
  for (const [ms, s] of cases) t.equal(goDuration(ms), s, `${ms} ms`);
});

t.test("a node's share of a key's limit: 1/N of the rate and of the burst", async (t) => {
  t.equal(nodeShare(600, 1), 600);
  t.equal(nodeShare(600, 3), 200);
  t.equal(nodeShare(600, 0), 600, 'never more than the whole limit');
  const w = fresh();
  const share = nodeShare(60, 2);
  let admitted = 0;
  while (admit(w, 'requests', share, 1, 0, true) === 0) admitted++;
  t.equal(admitted, 30, 'half the burst on one of two nodes');
  t.equal(admit(w, 'requests', share, 1, 0, true), 2000, 'then one every 2 s (half the rate)');
  t.equal(admit(w, 'requests', share, 1, 2000, true), 0);
});

t.test('a share smaller than one cost admits one at a time, once the key owes nothing', async (t) => {
  const w = fresh();
  const share = nodeShare(1, 3); // one request per 3 minutes on this node
  t.equal(admit(w, 'requests', share, 1, 0, true), 0, 'the first is admitted');
  t.equal(admit(w, 'requests', share, 1, 0, true), 180_000, 'the next waits until the debt is paid');
  t.equal(admit(w, 'requests', share, 1, 179_999, true), 1);
  t.equal(admit(w, 'requests', share, 1, 180_000, true), 0);
  const tokens = fresh();
  t.equal(admit(tokens, 'tokens', 1000, 1500, 0), 30_000, 'not shared: never fits');
  t.equal(admit(tokens, 'tokens', 1000, 1500, 0, true), 0, 'a request above a minute of the share, with nothing owed');
  t.equal(Math.round(admit(tokens, 'tokens', 1000, 1, 0, true)), 30_060, 'the next waits until its debt (90 s) is back within a minute');
  t.equal(admit(tokens, 'tokens', 1000, 1500, 0, true), 90_000, 'another oversized one waits until nothing is owed');
});
