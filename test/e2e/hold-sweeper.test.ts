// Reliability invariant 7: no open hold outlives its timeout plus the sweeper interval. Requests end
// their holds themselves and end within upstream.max_request_ms; the sweeper is the safety net for a
// hold whose end was missed, and says so in the log.
import t from 'tap';
import { startGateway } from '../helpers/gateway.js';
import { checkInvariants } from '../helpers/invariants.js';

t.test('the sweeper releases a hold older than max_request_ms plus its interval, and only that one', async (t) => {
  let now = Date.UTC(2026, 10, 22, 12);
  const logged: { level: string; msg: string }[] = [];
  const gw = await startGateway({
    clock: () => now,
    holdSweepIntervalMs: 20,
    log: (level, msg) => void logged.push({ level, msg }),
    configure: (c) => {
      c.upstream.max_request_ms = 60_000;
    },
  });
  t.teardown(() => gw.close());
  const reserve = () => gw.store.ledger.reserve({ accountId: gw.accountId, keyId: gw.keyId, amount: 1_000_000, monthlyLimitNano: null });
  // A hold whose request never ended it (what the sweeper is for), taken straight from the ledger.
  const stale = await reserve();
  if (!stale.ok) throw new Error('refused');
  now += 60_000 + 20 + 1;
  const recent = await reserve();
  if (!recent.ok) throw new Error('refused');

  // The sweeper runs every 20 ms: give it a generous 2 s, then judge.
  for (let waited = 0; waited < 2000 && !logged.some((l) => /hold sweeper released/.test(l.msg)); waited += 10) {
    await new Promise((r) => setTimeout(r, 10));
  }
  t.ok(logged.some((l) => /hold sweeper released/.test(l.msg)), 'the sweeper released something');
  t.equal(await gw.store.ledger.settle(stale.hold.id, 1), null, 'the stale hold has ended: a late settle charges nothing');
  t.equal((await gw.store.ledger.balance(gw.accountId)).held, 1_000_000, 'the recent hold is still open');
  t.equal(logged.find((l) => /hold sweeper/.test(l.msg))?.level, 'error', 'logged as the bug it means');
  t.equal(await gw.store.ledger.settle(recent.hold.id, 500), 500);
  t.same(await checkInvariants(gw.store, { noOpenHolds: true }), []);
});
