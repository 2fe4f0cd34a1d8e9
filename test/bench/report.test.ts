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

t.test('PostgreSQL mode targets: added p50 over SQLite mode, throughput against SQLite mode and one node against two', async (t) => {
  const { checkTargets } = await import('../../bench/report.js');
  const { scenarios } = await import('../../bench/scenarios.js');
  const fig = (via: RunFigures['via'], loop: 'closed' | 'open', reqPerSec: number, p50Ms: number): RunFigures =>
    ({ via, loop, ...(loop === 'open' ? { rate: 1000 } : { concurrency: 32 }), ok: 1, errors: 0, reqPerSec, p50Ms, p99Ms: p50Ms * 2, cpuPercent: { loadgen: 0, simulator: 0, others: 0 } } as RunFigures);
  const runs = [
    fig('gateway', 'closed', 1000, 1), fig('gateway-pg', 'closed', 790, 1), fig('gateway-pg-2', 'closed', 800, 1),
    fig('gateway', 'open', 1000, 1.0), fig('gateway-pg', 'open', 1000, 1.25), fig('gateway-pg-2', 'open', 1000, 1.5),
  ];
  const targets = checkTargets([{ scenario: scenarios[0], runs }], [], undefined, 1000);
  const target = (name: string) => targets.find((x) => x.name.trim().startsWith(name))!;
  t.match(target('PostgreSQL 1 node: added p50'), { measured: '+0.25 ms', pass: true });
  t.match(target('2 nodes: added p50 over SQLite'), { measured: '+0.50 ms', pass: undefined });
  t.match(target('PostgreSQL 1 node vs SQLite throughput'), { measured: '79.0%', pass: false });
  t.match(target('PostgreSQL 2 nodes vs 1 node'), { measured: '101.3%', pass: true });
});
