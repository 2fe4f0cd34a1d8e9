// Breakers: threshold, cooldown on an injected clock, one trial request when half-open,
// success closes, failure reopens, abandon frees the trial slot, reopensIn, upstream Retry-After hints.
import t from 'tap';
import { Breakers, MAX_RETRY_HINT_MS } from '../../lib/breaker.js';

function setup(failure_threshold = 3, cooldown_ms = 1000) {
  const clock = { now: 10_000 };
  const b = new Breakers({ failure_threshold, cooldown_ms }, () => clock.now);
  return { b, clock };
}

/** Fail a listing n times, as the chain does after each failed attempt. */
function fail(b: Breakers, listing: string, n: number) {
  for (let i = 0; i < n; i++) {
    b.tryAcquire(listing);
    b.failure(listing);
  }
}

t.test('an unknown listing is closed', async (t) => {
  const { b } = setup();
  t.equal(b.tryAcquire('a'), true);
  t.equal(b.isOpen('a'), false);
  t.equal(b.reopensIn('a'), 0);
});

t.test('opens after exactly failure_threshold consecutive failures', async (t) => {
  const { b } = setup(3);
  fail(b, 'a', 2);
  t.equal(b.tryAcquire('a'), true, 'two failures: still closed');
  t.equal(b.isOpen('a'), false);
  t.equal(b.reopensIn('a'), 0);
  b.failure('a');
  t.equal(b.isOpen('a'), true, 'third failure opens it');
  t.equal(b.tryAcquire('a'), false);
  t.equal(b.tryAcquire('b'), true, 'other listings are unaffected');
});

t.test('a success in between resets the count (failures must be consecutive)', async (t) => {
  const { b } = setup(3);
  fail(b, 'a', 2);
  b.success('a');
  fail(b, 'a', 2);
  t.equal(b.isOpen('a'), false);
  t.equal(b.tryAcquire('a'), true);
});

t.test('cooldown follows the injected clock; reopensIn counts down', async (t) => {
  const { b, clock } = setup(1, 1000);
  fail(b, 'a', 1);
  t.equal(b.reopensIn('a'), 1000);
  clock.now += 400;
  t.equal(b.reopensIn('a'), 600);
  t.equal(b.tryAcquire('a'), false);
  clock.now += 599;
  t.equal(b.reopensIn('a'), 1);
  t.equal(b.tryAcquire('a'), false, 'one ms before the end of the cooldown');
  clock.now += 1;
  t.equal(b.reopensIn('a'), 0);
  t.equal(b.isOpen('a'), false, 'cooled down, no trial yet: usable');
});

t.test('half-open: exactly one trial request at a time', async (t) => {
  const { b, clock } = setup(2, 500);
  fail(b, 'a', 2);
  clock.now += 500;
  t.equal(b.tryAcquire('a'), true, 'the trial');
  t.equal(b.tryAcquire('a'), false, 'a second request while the trial runs');
  t.equal(b.isOpen('a'), true, 'listed as unusable while the trial runs');
  clock.now += 10_000;
  t.equal(b.tryAcquire('a'), false, 'still one trial, however long it takes');
});

t.test('a successful trial closes the breaker', async (t) => {
  const { b, clock } = setup(2, 500);
  fail(b, 'a', 2);
  clock.now += 500;
  t.equal(b.tryAcquire('a'), true);
  b.success('a');
  t.equal(b.isOpen('a'), false);
  t.equal(b.tryAcquire('a'), true);
  t.equal(b.tryAcquire('a'), true, 'no trial limit once closed');
  b.failure('a');
  t.equal(b.isOpen('a'), false, 'the count starts again from zero');
});

t.test('a failed trial reopens for a full cooldown', async (t) => {
  const { b, clock } = setup(2, 500);
  fail(b, 'a', 2);
  clock.now += 500;
  t.equal(b.tryAcquire('a'), true);
  b.failure('a');
  t.equal(b.isOpen('a'), true);
  t.equal(b.reopensIn('a'), 500);
  t.equal(b.tryAcquire('a'), false);
  clock.now += 500;
  t.equal(b.tryAcquire('a'), true, 'next trial after the new cooldown');
});

t.test('abandon frees the trial slot without a verdict', async (t) => {
  const { b, clock } = setup(1, 500);
  fail(b, 'a', 1);
  clock.now += 500;
  t.equal(b.tryAcquire('a'), true);
  t.equal(b.tryAcquire('a'), false);
  b.abandon('a');
  t.equal(b.isOpen('a'), false);
  t.equal(b.reopensIn('a'), 0, 'no new cooldown');
  t.equal(b.tryAcquire('a'), true, 'another request may try');
  b.abandon('unknown'); // harmless
  t.equal(b.tryAcquire('unknown'), true);
});

t.test('reconfigure changes the threshold for later decisions', async (t) => {
  const { b } = setup(5, 1000);
  fail(b, 'a', 2);
  t.equal(b.isOpen('a'), false);
  b.reconfigure({ failure_threshold: 3, cooldown_ms: 1000 });
  b.failure('a');
  t.equal(b.isOpen('a'), true);
});

t.test("an upstream's Retry-After: reported by reopensIn, and the cooldown of the failure that opens the breaker", async (t) => {
  const { b, clock } = setup(2, 30_000);
  b.tryAcquire('a');
  b.failure('a', 7000);
  t.equal(b.isOpen('a'), false, 'below the threshold the offer stays usable');
  t.equal(b.tryAcquire('a'), true);
  t.equal(b.reopensIn('a'), 7000, 'but it said it answers again in 7 s');
  clock.now += 2000;
  b.failure('a', 5000);
  t.equal(b.isOpen('a'), true, 'the second failure opens it');
  t.equal(b.reopensIn('a'), 5000, "for the upstream's 5 s, not the 30 s cooldown");
  clock.now += 5000;
  t.equal(b.tryAcquire('a'), true, 'the trial comes when the upstream said it would answer');
  b.failure('a');
  t.equal(b.reopensIn('a'), 30_000, 'a failure without a hint: the cooldown again');
});

t.test('a later hint replaces an earlier one; an absurd hint is capped at MAX_RETRY_HINT_MS', async (t) => {
  const { b } = setup(5, 1000);
  b.failure('a', 60_000);
  b.failure('a', 3000);
  t.equal(b.reopensIn('a'), 3000);
  b.failure('a');
  t.equal(b.reopensIn('a'), 3000, 'a failure without a hint keeps the last one');
  b.failure('b', 1e15);
  t.equal(b.reopensIn('b'), MAX_RETRY_HINT_MS);
  b.failure('c', -5);
  t.equal(b.reopensIn('c'), 0);
  b.success('a');
  t.equal(b.reopensIn('a'), 0, 'a success forgets the hint');
});
