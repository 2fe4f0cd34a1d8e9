// The lease book's sizing (lib/store/postgres/leases.ts), without a database: a busy account's lease
// is grown by its recent spend, so it is grown rarely and requests seldom wait for a grow.
import t from 'tap';
import { LEASE_HOLDS, LEASE_SPEND_MS, LeaseBook } from '../../../lib/store/postgres/leases.js';

const HOLD = 10_000_000;
const ACCOUNT = 1;

/**
 * `requests` requests, one a millisecond, 50 in flight, each charged a quarter of its hold. A grow
 * is granted in full when the next request arrives (a database round trip). Returns the lease calls,
 * what each asked for, and how many requests had to wait for one.
 */
async function run(requests: number) {
  let now = 0;
  const wants: number[] = [];
  let pending: (() => void) | undefined;
  const answerPending = () => {
    const answer = pending;
    pending = undefined;
    answer?.();
  };
  const book = new LeaseBook('node', {
    clock: () => now,
    grow: (_account, _owner, want) => {
      wants.push(want);
      return new Promise<number>((resolve) => (pending = () => resolve(want)));
    },
    schedule: () => {},
    mayLease: () => true,
  });
  let waited = 0;
  let inFlight = 0;
  for (let i = 0; i < requests; i++) {
    now++;
    answerPending();
    await Promise.resolve();
    if (inFlight === 50) {
      book.end(ACCOUNT, book.owner, HOLD, HOLD / 4);
      inFlight--;
    }
    let taken = book.take(ACCOUNT, HOLD);
    if (taken instanceof Promise) {
      waited++;
      answerPending();
      taken = await taken;
    }
    if (!taken) throw new Error('refused');
    inFlight++;
  }
  return { wants, waited };
}

t.test('a busy account\'s lease is grown by about a second of its spend: few lease calls, few waits', async (t) => {
  const { wants, waited } = await run(5000);
  // Sized on holds alone (32 holds a grow, a quarter of a hold spent a request): 41 calls. Sized on the
  // spend: about as often in the first second, before a rate is known, then one a second (15 in all).
  t.ok(wants.length <= 20, `${wants.length} lease calls for 5000 requests`);
  t.ok(waited <= 3, `${waited} requests waited for a grow`);
  const spendPerMs = HOLD / 4; // one request a millisecond
  t.ok(wants.at(-1)! >= spendPerMs * LEASE_SPEND_MS * 0.9, `the last grow asked for about a second of spend (${wants.at(-1)! / HOLD} holds)`);
});

// A guard for the start, not a test of the change: the old sizing asked the same.
t.test('before any spend is measured, a grow asks for LEASE_HOLDS holds', async (t) => {
  const { wants } = await run(10);
  t.same(wants[0], HOLD * LEASE_HOLDS);
});
