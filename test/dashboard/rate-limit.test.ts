// The login throttle: free failures, then waits that double up to a cap; forgotten after a while;
// bounded memory whatever names arrive.
import t from 'tap';
import { AttemptLimiter } from '../../lib/dashboard/rate-limit.js';

const policy = { free: 3, baseMs: 1000, maxMs: 60_000, forgetMs: 3_600_000 };

t.test('after the free failures each wait doubles, up to the cap; a success resets', async (t) => {
  let now = 0;
  const l = new AttemptLimiter(policy, () => now);
  const waits: number[] = [];
  for (let i = 0; i < 10; i++) {
    now += l.retryAfter('a');
    t.equal(l.retryAfter('a'), 0, `attempt ${i + 1} may go once its wait is over`);
    l.fail('a');
    waits.push(l.retryAfter('a'));
  }
  t.same(waits, [0, 0, 1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000]);
  t.equal(l.retryAfter('b'), 0, 'other names are not slowed');
  l.reset('a');
  t.equal(l.retryAfter('a'), 0);
});

t.test('forgive takes back one failure; failures are forgotten forgetMs after the last', async (t) => {
  let now = 0;
  const l = new AttemptLimiter(policy, () => now);
  l.fail('a');
  l.fail('a');
  l.fail('a');
  t.equal(l.retryAfter('a'), 1000);
  l.forgive('a');
  t.equal(l.retryAfter('a'), 0, 'below the free failures again');
  l.fail('a');
  now += policy.forgetMs + 1;
  t.equal(l.retryAfter('a'), 0);
  l.fail('a');
  t.equal(l.retryAfter('a'), 0, 'counting starts over');
});

t.test('memory stays bounded under a flood of long names', async (t) => {
  const l = new AttemptLimiter(policy);
  const long = 'x'.repeat(10_000);
  for (let i = 0; i < 2000; i++) l.fail(`${long}${i}`);
  t.ok(l.size <= 800, `${l.size} of 2000 names of 10,000 characters kept`);
  for (let i = 0; i < 60_000; i++) l.fail(`n${i}`);
  t.ok(l.size <= 50_000, `${l.size} short names kept`);
});

t.test('N nodes share the allowance: free failures divided by N, each wait multiplied by N', async (t) => {
  let now = 0;
  let nodes = 2;
  const l = new AttemptLimiter(policy, () => now, () => nodes);
  const waits: number[] = [];
  for (let i = 0; i < 5; i++) {
    now += l.retryAfter('a');
    l.fail('a');
    waits.push(l.retryAfter('a'));
  }
  // One free failure per node (3 / 2: no wait before the first), then 2 s, 4 s, 8 s, … (1 s, 2 s, 4 s, … times 2):
  // two nodes together admit no more attempts than one node alone.
  t.same(waits, [2000, 4000, 8000, 16_000, 32_000]);
  l.forgive('a');
  t.equal(l.retryAfter('a'), 32_000, 'a wait already due stays');
  nodes = 5;
  const b = new AttemptLimiter(policy, () => now, () => nodes);
  b.fail('b');
  t.equal(b.retryAfter('b'), 5000, 'more nodes than free failures: one each');
  nodes = 1000;
  for (let i = 0; i < 30; i++) b.fail('b');
  t.equal(b.retryAfter('b'), 1000 * policy.maxMs, 'the cap is a node\'s share too');
});
