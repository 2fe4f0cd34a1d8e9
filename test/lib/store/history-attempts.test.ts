// A history row's attempts as JSON (queued-history.ts attemptsJson): JSON.stringify's text once
// parsed, durations to a hundredth of a millisecond.
import t from 'tap';
import { attemptsJson } from '../../../lib/store/queued-history.js';
import type { Attempt } from '../../../lib/context.js';

t.test('attempts read back as JSON.stringify wrote them, durations rounded to 0.01 ms', async (t) => {
  const cases: Attempt[][] = [
    [],
    [{ listing: 'bench/chat-native@bench-chat', outcome: 'ok', status: 200, durationMs: 0.8123456789 }],
    [
      { listing: 'm@a', outcome: 'skipped', reason: 'cooling down after repeated failures', durationMs: 0 },
      { listing: 'm@b', outcome: 'failed', status: 503, reason: 'upstream 503: "busy"\n\\ \u2028 \ud800', durationMs: 12.345 },
      { listing: 'q"uote\u0001', outcome: 'ok', status: 200, durationMs: 1234567.891 },
    ],
    [{ listing: 'm@c', outcome: 'failed', reason: undefined, status: undefined, durationMs: NaN }],
  ];
  const rounded = (list: Attempt[]) => list.map((a) => ({ ...a, durationMs: Number.isFinite(a.durationMs) ? Math.round(a.durationMs * 100) / 100 : a.durationMs }));
  for (const list of cases) {
    const text = attemptsJson(list);
    t.same(JSON.parse(text), JSON.parse(JSON.stringify(rounded(list))), text.replace(/[^\x20-\x7e]/g, '?'));
  }
  t.equal(attemptsJson([{ listing: 'l', outcome: 'ok', status: 200, durationMs: 0.1 + 0.2 }]), '[{"listing":"l","outcome":"ok","status":200,"durationMs":0.3}]');
});
