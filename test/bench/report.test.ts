import t from 'tap';
import { pairedThroughputRatio, type RunFigures } from '../../bench/report.js';

const run = (reqPerSec: number, roundReqPerSec?: number[]): RunFigures =>
  ({ via: 'gateway', loop: 'closed', ok: 1, errors: 0, reqPerSec, p50Ms: 1, p99Ms: 1, roundReqPerSec } as RunFigures);

t.test('interleaved rounds: the median of the round-by-round ratios, not the ratio of the medians', async (t) => {
  // The machine got slower in rounds 2 and 3: every round's own ratio is 0.9, the medians' is 0.45.
  const on = run(450, [900, 450, 450, 900]);
  const off = run(1000, [1000, 500, 500, 1000]);
  t.equal(pairedThroughputRatio(on, off), 0.9);
});

t.test('an even count of rounds takes the lower middle ratio', async (t) => {
  const ratio = pairedThroughputRatio(run(0, [80, 90, 70, 100]), run(0, [100, 100, 100, 100]));
  t.equal(ratio, 0.8);
});

t.test('one round, or rounds that do not pair up: the plain ratio of the runs', async (t) => {
  t.equal(pairedThroughputRatio(run(80, [80]), run(100, [100])), 0.8);
  t.equal(pairedThroughputRatio(run(80, [80, 80]), run(100, [100, 100, 100])), 0.8);
  t.equal(pairedThroughputRatio(run(80), run(100)), 0.8);
  t.equal(pairedThroughputRatio(undefined, run(100)), undefined);
});
