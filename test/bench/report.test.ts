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
    fig('bare-proxy', 'closed', 2000, 1), fig('bare-proxy-2', 'closed', 1900, 1),
    fig('gateway', 'open', 1000, 1.0), fig('gateway-pg', 'open', 1000, 1.25), fig('gateway-pg-2', 'open', 1000, 1.5),
  ];
  const targets = checkTargets([{ scenario: scenarios[0], runs }], [], 1000);
  const target = (name: string) => targets.find((x) => x.name.trim().startsWith(name))!;
  t.match(target('PostgreSQL 1 node: added p50'), { measured: '+0.25 ms', pass: true });
  t.match(target('2 nodes: added p50 over SQLite'), { measured: '+0.50 ms', pass: undefined });
  t.match(target('PostgreSQL 1 node vs SQLite throughput'), { measured: '79.0%', pass: false });
  t.match(target('PostgreSQL 2 nodes vs 1 node'), { measured: '101.3%', pass: true });
  // Shown beside it, not judged: what a second process gains on the same cores at all.
  t.match(target('2 bare proxies vs 1'), { measured: '95.0%', pass: undefined });
});

// Issue 18: the core targets against the bare node:http proxy of the same run, billing on, passthrough.
/** One server's figures in a scenario: closed-loop rounds (throughput, CPU per request) and open-loop latency at 1,000 req/s. */
interface Side {
  req: number[];
  cpu?: number[];
  p50: number;
  p99: number;
  ttfb: number;
  /** CPU per request in the open loop. */
  openCpu?: number;
  /** The open loop's slices, each one's own figures (p50, p99 and ttfb above are the pooled ones). */
  slices?: { p50Ms: number[]; p99Ms: number[]; ttfbP50Ms?: number[] };
}

function runsOf(sides: Partial<Record<RunFigures['via'], Side>>): RunFigures[] {
  const base = { ok: 1, errors: 0, cpuPercent: { loadgen: 0, simulator: 0, others: 0 } };
  return Object.entries(sides).flatMap(([via, s]) => [
    { ...base, via, loop: 'closed', concurrency: 50, reqPerSec: s.req[0], roundReqPerSec: s.req, cpuUsPerReq: s.cpu?.[0], roundCpuUsPerReq: s.cpu, p50Ms: 1, p99Ms: 1 },
    { ...base, via, loop: 'open', rate: 1000, reqPerSec: 1000, p50Ms: s.p50, p99Ms: s.p99, ttfbP50Ms: s.ttfb, cpuUsPerReq: s.openCpu, sliceLatency: s.slices },
  ] as RunFigures[]);
}

const direct: Side = { req: [2000, 2000, 2000, 2000], p50: 1.0, p99: 2.0, ttfb: 0.5 };
const bare: Side = { req: [1000, 1000, 1000, 1000], cpu: [100, 100, 100, 100], p50: 1.3, p99: 3.0, ttfb: 0.7 };
/**
 * Within every target: CPU 1.4 to 1.7x, throughput 0.45 to 0.6x round by round (of the two middle
 * rounds, the worse: 1.6x, 0.5x), latency 0.15/0.9/0.15 ms over the bare proxy's.
 */
const good: Side = { req: [600, 500, 550, 450], cpu: [150, 160, 170, 140], p50: 1.45, p99: 3.9, ttfb: 0.85 };
/** Over every target: CPU 2.2x (the middle rounds 2.1x and 2.2x), throughput 0.48x, latency 0.3/1.2/0.3 ms over the bare proxy's. */
const bad: Side = { req: [480, 490, 400, 700], cpu: [220, 210, 230, 190], p50: 1.6, p99: 4.2, ttfb: 1.0 };

async function coreTargets(gateway: Side, other = {}, bareProxy = bare) {
  const { checkTargets } = await import('../../bench/report.js');
  const { scenarios } = await import('../../bench/scenarios.js');
  const passthrough = scenarios.filter((s) => s.client === s.upstream).slice(0, 2); // chat-chat-json, chat-chat-stream
  const results = passthrough.map((scenario) => ({ scenario, runs: runsOf({ direct, 'bare-proxy': bareProxy, gateway }) }));
  const targets = checkTargets(results, [], 1000, other);
  return (name: string) => {
    const found = targets.find((x) => x.name.startsWith(name));
    if (!found) throw new Error(`no target ${name}`);
    return found;
  };
}

t.test("CPU per request: at most 2.0x the bare proxy's, paired round by round (of an even count the higher middle round), non-stream and stream", async (t) => {
  const ok = await coreTargets(good);
  t.match(ok('CPU per request vs bare proxy (non-stream'), { gateway: '150 µs', bare: '100 µs', measured: '1.60x', goal: '<= 2.0x', spread: '1.40x–1.70x', worst: 'chat-chat-json', pass: true });
  t.match(ok('CPU per request vs bare proxy (20-chunk streams)'), { measured: '1.60x', worst: 'chat-chat-stream', pass: true });
  const over = await coreTargets(bad);
  t.match(over('CPU per request vs bare proxy (non-stream'), { gateway: '220 µs', measured: '2.20x', spread: '1.90x–2.30x', pass: false });
  t.match(over('CPU per request vs bare proxy (20-chunk streams)'), { measured: '2.20x', pass: false });
});

t.test("CPU per request with both at the open loop's rate, beside the saturated rows: shown, not judged", async (t) => {
  const row = await coreTargets({ ...good, openCpu: 330 }, {}, { ...bare, openCpu: 150 });
  t.match(row('  both at 1000 req/s, non-stream'), { gateway: '330 µs', bare: '150 µs', measured: '2.20x', worst: 'chat-chat-json', pass: undefined });
  t.match(row('  both at 1000 req/s, streams'), { measured: '2.20x', worst: 'chat-chat-stream', pass: undefined });
  t.match((await coreTargets(good))('  both at 1000 req/s, non-stream'), { measured: 'not measured' }, 'no open-loop CPU, no figure');
});

t.test("the floor proxy's CPU per request against the bare proxy's, under the CPU target: shown, not judged", async (t) => {
  const { checkTargets } = await import('../../bench/report.js');
  const { scenarios } = await import('../../bench/scenarios.js');
  const floor: Side = { req: [900, 900, 900, 900], cpu: [115, 120, 110, 125], p50: 1.3, p99: 3.0, ttfb: 0.7 };
  const targets = checkTargets([{ scenario: scenarios[0], runs: runsOf({ direct, 'bare-proxy': bare, gateway: good, 'floor-proxy': floor }) }], [], 1000);
  t.match(targets.find((x) => x.name.startsWith('  floor proxy')), { gateway: '115 µs', bare: '100 µs', measured: '1.20x', spread: '1.10x–1.25x', worst: 'chat-chat-json', pass: undefined });
  t.match((await coreTargets(good))('  floor proxy'), { measured: 'not measured' }, 'no floor proxy run, no figure');
});

t.test("saturated throughput: at least 0.5x the bare proxy's, the median of the rounds' ratios", async (t) => {
  t.match((await coreTargets(good))('saturated throughput'),
    { gateway: '600 req/s', bare: '1000 req/s', measured: '0.50x', goal: '>= 0.50x', spread: '0.45x–0.60x', pass: true });
  t.match((await coreTargets(bad))('saturated throughput'), { measured: '0.48x', spread: '0.40x–0.70x', pass: false });
});

t.test("added latency at the open-loop rate: over the bare proxy's added p50 +0.2 ms, p99 +1.0 ms, first stream byte +0.2 ms", async (t) => {
  const ok = await coreTargets(good);
  t.match(ok('added p50 at 1000 req/s'), { gateway: '+0.45 ms', bare: '+0.30 ms', measured: '+0.15 ms', goal: '<= +0.2 ms', pass: true });
  t.match(ok('added p99 at 1000 req/s'), { gateway: '+1.90 ms', bare: '+1.00 ms', measured: '+0.90 ms', goal: '<= +1.0 ms', pass: true });
  t.match(ok('added stream first byte'), { gateway: '+0.35 ms', bare: '+0.20 ms', measured: '+0.15 ms', worst: 'chat-chat-stream', pass: true });
  const over = await coreTargets(bad);
  t.match(over('added p50 at 1000 req/s'), { measured: '+0.30 ms', pass: false });
  t.match(over('added p99 at 1000 req/s'), { measured: '+1.20 ms', pass: false });
  t.match(over('added stream first byte'), { measured: '+0.30 ms', pass: false });
});

t.test('added latency in interleaved slices: the median of the slice-by-slice differences (of an even count the higher middle one), their spread shown', async (t) => {
  // One stall of the machine fell on the gateway's third slice: its pooled p99 is 9 ms, 6 over the
  // bare proxy's, while slice by slice it is 0.6 to 0.9 ms over, but for that slice.
  const bareSlices = { ...bare, slices: { p50Ms: [1.3, 1.3, 1.3, 1.3], p99Ms: [3.0, 3.2, 2.8, 3.0], ttfbP50Ms: [0.7, 0.7, 0.7, 0.7] } };
  const stalled = { ...good, p99: 9.0, slices: { p50Ms: [1.4, 1.45, 1.45, 1.5], p99Ms: [3.6, 4.1, 9.5, 3.9], ttfbP50Ms: [0.8, 0.85, 0.85, 0.9] } };
  const row = await coreTargets(stalled, {}, bareSlices);
  t.match(row('added p99 at 1000 req/s'), { gateway: '+7.00 ms', bare: '+1.00 ms', measured: '+0.90 ms', spread: '+0.60 ms–+6.70 ms', pass: true });
  t.match(row('added p50 at 1000 req/s'), { measured: '+0.15 ms', spread: '+0.10 ms–+0.20 ms', pass: true });
  t.match(row('added stream first byte'), { measured: '+0.15 ms', pass: true });
  // Stalls in two of the four slices are the gateway's own: the higher middle one fails.
  const twice = { ...stalled, slices: { ...stalled.slices, p99Ms: [3.6, 5.2, 9.5, 3.9] } };
  t.match((await coreTargets(twice, {}, bareSlices))('added p99 at 1000 req/s'), { measured: '+2.00 ms', pass: false });
  // Slices that do not pair up: the pooled figures' difference, no spread.
  const unpaired = await coreTargets({ ...stalled, slices: { p50Ms: [1.45], p99Ms: [9.0] } }, {}, bareSlices);
  t.match(unpaired('added p99 at 1000 req/s'), { measured: '+6.00 ms', spread: undefined, pass: false });
});

t.test("a plain request's p50 and p99 are judged on non-stream scenarios, a stream's first byte at its own rate; a whole stream's p50 is shown", async (t) => {
  const { checkTargets } = await import('../../bench/report.js');
  const { scenarios } = await import('../../bench/scenarios.js');
  const [plain, stream] = scenarios.filter((s) => s.client === s.upstream); // chat-chat-json, chat-chat-stream
  // At 1,000 req/s the streams saturate the machine (every server queues); at 200 their first byte is within the target.
  const saturated: Side = { ...good, p50: 90, p99: 300, ttfb: 89 };
  const at200 = (via: RunFigures['via'], ttfb: number): RunFigures =>
    ({ via, loop: 'open', rate: 200, ok: 1, errors: 0, reqPerSec: 200, p50Ms: 3, p99Ms: 5, ttfbP50Ms: ttfb, cpuPercent: { loadgen: 0, simulator: 0, others: 0 } } as RunFigures);
  const results = [
    { scenario: plain, runs: runsOf({ direct, 'bare-proxy': bare, gateway: good }) },
    { scenario: stream, runs: [...runsOf({ direct, 'bare-proxy': { ...bare, p50: 20, p99: 200, ttfb: 19 }, gateway: saturated }), at200('direct', 1.0), at200('bare-proxy', 1.5), at200('gateway', 1.65)] },
  ];
  const targets = checkTargets(results, [], 1000, {}, 200);
  const target = (name: string) => targets.find((x) => x.name.startsWith(name))!;
  t.match(target('added p50 at 1000 req/s'), { measured: '+0.15 ms', worst: 'chat-chat-json', pass: true });
  t.match(target('added p99 at 1000 req/s'), { measured: '+0.90 ms', worst: 'chat-chat-json', pass: true });
  t.match(target('added stream first byte (p50, 200 req/s)'), { gateway: '+0.65 ms', bare: '+0.50 ms', measured: '+0.15 ms', worst: 'chat-chat-stream', pass: true });
  t.match(target('  streams at 1000 req/s: added p50 of the whole stream'), { measured: '+70.00 ms', pass: undefined });
  // Judged at 1,000 req/s, the saturated streams' first byte fails.
  t.match(checkTargets(results, [], 1000).find((x) => x.name.startsWith('added stream first byte')), { measured: '+70.00 ms', pass: false });
});

t.test('one round (--quick): the plain ratio of the runs, no spread', async (t) => {
  const once = (s: Side): Side => ({ ...s, req: s.req.slice(0, 1), cpu: s.cpu?.slice(0, 1) });
  const { checkTargets } = await import('../../bench/report.js');
  const { scenarios } = await import('../../bench/scenarios.js');
  const targets = checkTargets([{ scenario: scenarios[0], runs: runsOf({ direct: once(direct), 'bare-proxy': once(bare), gateway: once(good) }) }], [], 1000);
  const cpu = targets.find((x) => x.name.startsWith('CPU per request vs bare proxy (non-stream'))!;
  t.match(cpu, { measured: '1.50x', pass: true });
  t.equal(cpu.spread, undefined);
  t.match(targets.find((x) => x.name.startsWith('saturated throughput')), { measured: '0.60x', pass: true });
});

t.test("peak RSS at most 150 MB, the bare proxy's beside it; billing hooks at most 25 µs per request, the worse of the two loads", async (t) => {
  const ok = await coreTargets(good, { peakRssMb: { gateway: 140, bare: 60 }, billingHooksUs: { busy: 12, single: 20 } });
  t.match(ok('peak RSS'), { gateway: '140.0 MB', bare: '60.0 MB', goal: '<= 150 MB', pass: true });
  t.match(ok("billing hooks' event-loop work"), { measured: '20.0 µs', worst: 'in-process, 1 per turn', goal: '<= 25 µs', pass: true });
  const over = await coreTargets(good, { peakRssMb: { gateway: 160.5 }, billingHooksUs: { busy: 30, single: 20 } });
  t.match(over('peak RSS'), { measured: '160.5 MB', pass: false });
  t.match(over("billing hooks' event-loop work"), { measured: '30.0 µs', worst: 'in-process, 8 per turn', pass: false });
  t.match((await coreTargets(good))('peak RSS'), { measured: 'not measured', pass: undefined });
  // The whole run's peak (an overloaded open loop's requests in flight) is shown, not judged.
  const whole = await coreTargets(good, { peakRssMb: { gateway: 140, bare: 60, gatewayWholeRun: 165 } });
  t.match(whole('peak RSS'), { measured: '140.0 MB', worst: 'closed loops', pass: true });
  t.match(whole('  whole run'), { measured: '165.0 MB', pass: undefined });
});

t.test("the targets table shows the gateway's figure, the bare proxy's, the goal, the spread and the verdict", async (t) => {
  const { targetsReport } = await import('../../bench/report.js');
  const target = (await coreTargets(good))('CPU per request vs bare proxy (non-stream');
  const [header, row] = targetsReport([target]).split('\n');
  t.match(header, /^target\s+gateway\s+bare proxy\s+measured \(worst\)\s+goal\s+rounds min–max\s+where\s+verdict$/);
  t.match(row, /150 µs\s+100 µs\s+1\.60x\s+<= 2\.0x\s+1\.40x–1\.70x\s+chat-chat-json\s+PASS$/);
});

t.test('latency is judged on passthrough scenarios only: plain requests at the latency rate, streams at the first-byte rate', async (t) => {
  const { latencyJudgedAt } = await import('../../bench/report.js');
  const { scenarios } = await import('../../bench/scenarios.js');
  const rateOf = (id: string) => latencyJudgedAt(scenarios.find((s) => s.id === id)!, 1000, 200);
  t.equal(rateOf('chat-chat-json'), 1000);
  t.equal(rateOf('chat-chat-stream'), 200);
  t.equal(rateOf('chat-messages-json'), undefined);
});
