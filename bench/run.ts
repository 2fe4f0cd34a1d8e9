// `npm run bench`: the gateway against the same load sent straight to the simulated provider, in
// one run. Processes: this one generates the load (and times validation in-process); the simulator
// and each gateway run in their own child process. Only one server is under load at a time.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type http from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { hrtime } from 'node:process';
import { parseArgs } from 'node:util';
import { packageRoot } from '../lib/package-root.js';
import { closedLoop, keepAliveAgent, openLoop, quantile, type LoadResult, type Target } from './load.js';
import { cpuMs, machineBusyMs, mainThreadCpuMs, peakRssMb, resetPeakRss, type Child } from './procs.js';
import {
  checkTargets,
  latencyJudgedAt,
  scenarioReport,
  targetsReport,
  validationReport,
  type RunFigures,
  type ScenarioFigures,
  type ValidationShare,
  type Via,
} from './report.js';
import { checkSample, requestTarget, scenarios, type Scenario } from './scenarios.js';
import {
  BILLING_OFF_PLUGINS,
  UPSTREAM_KEY,
  createBenchKey,
  gatewayConfig,
  startBareProxyProcess,
  startFloorProxyProcess,
  startGatewayProcess,
  startSimulatorProcess,
  writeConfig,
} from './setup.js';
import { measureValidation } from './validation.js';
import { measureBillingHooks } from './billing-hooks.js';
import { measureWorstBodies, worstBodyReport, type WorstBodyFigures } from './worst-body.js';
import { measureResentConversation, resentConversationReport, type ResentFigures } from './resent-conversation.js';
import { measureRateLimitHooks } from './rate-limit-hooks.js';
import { measureMetricsHooks, type MetricsCost } from './metrics-hooks.js';
import { createBenchDatabase, type BenchDatabase } from './postgres-db.js';
import { allocationReport, measureAllocation, type HeapAllocation } from './allocation.js';

const USAGE = `usage: npm run bench -- [options]
  --quick            1 s runs after 0.3 s warm-ups (3.5 minutes in all on one session's machine,
                     30 s of them the servers' 5 s compiler warm-ups)
  --duration S       measured seconds per run (default 3)
  --warmup S         unmeasured seconds before each run (default 0.5)
  --concurrency N    closed-loop requests in flight (default 50: the peak RSS target's load)
  --rounds N         closed-loop runs per server, interleaved, every other round in reverse order;
                     the median is reported. Open-loop runs are split into as many interleaved
                     slices, their answers pooled (default 4, --quick 1)
  --rates R,R        open-loop offered rates, req/s (default 200,1000; a plain request's latency
                     targets use the last, the first stream byte's 200 where it is one of them)
  --only ID,ID       scenarios to run (default all: ${scenarios.map((s) => s.id).join(', ')})
  --no-postgres      leave out PostgreSQL mode (by default, where PostgreSQL answers at
                     GATEWAY_BENCH_POSTGRES or postgres://postgres@127.0.0.1:5432, the passthrough
                     scenarios also run one and two billing-on gateway nodes on a fresh database)
environment: GATEWAY_BENCH_NODE_FLAGS="--cpu-prof --cpu-prof-dir=DIR" passes Node flags to the
                     gateway processes only (profiles, heap snapshots); a profile's self time by
                     function and file: node dist/bench/cpuprofile-summary.js FILE.cpuprofile`;

interface Options {
  durationMs: number;
  warmupMs: number;
  concurrency: number;
  rounds: number;
  rates: number[];
  scenarios: Scenario[];
  postgres: boolean;
}

function options(argv: string[]): Options | undefined {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      concurrency: { type: 'string' },
      rounds: { type: 'string' },
      rates: { type: 'string' },
      only: { type: 'string' },
      'no-postgres': { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) return undefined;
  const positive = (name: string, v: string | undefined, dflt: number) => {
    const n = v === undefined ? dflt : Number(v);
    if (!(n > 0)) throw new Error(`--${name} must be a positive number, not ${v}`);
    return n;
  };
  const only = values.only?.split(',');
  const unknown = only?.filter((id) => !scenarios.some((s) => s.id === id));
  if (unknown?.length) throw new Error(`unknown scenario ${unknown.join(', ')}\n${USAGE}`);
  return {
    durationMs: positive('duration', values.duration, values.quick ? 1 : 3) * 1000,
    warmupMs: positive('warmup', values.warmup, values.quick ? 0.3 : 0.5) * 1000,
    concurrency: Math.round(positive('concurrency', values.concurrency, 50)),
    rounds: Math.round(positive('rounds', values.rounds, values.quick ? 1 : 4)),
    rates: (values.rates ?? '200,1000').split(',').map((r) => positive('rates', r, 0)),
    scenarios: only ? scenarios.filter((s) => only.includes(s.id)) : scenarios,
    postgres: !values['no-postgres'],
  };
}

/** The open-loop rate a plain request's latency targets are judged at: the last one. */
const latencyRate = (o: Options) => o.rates[o.rates.length - 1];
/** The rate the issue's reference harness measured the first stream byte at. */
const FIRST_BYTE_RATE = 200;
/** The open-loop rate the first stream byte is judged at: FIRST_BYTE_RATE where the bench runs it. */
const firstByteRate = (o: Options) => (o.rates.includes(FIRST_BYTE_RATE) ? FIRST_BYTE_RATE : latencyRate(o));
/** The rate `s`'s latency is judged at, if it is (report.ts). */
const judgedRate = (o: Options, s: Scenario) => latencyJudgedAt(s, latencyRate(o), firstByteRate(o));

/** Open loop: sockets, and the most requests left unanswered before due ones are skipped. */
const OPEN_LOOP_SOCKETS = 128;
/** How long after its planned end a run may wait for its last answers. */
const STALL_MS = 30_000;
const ms = (ns: number) => ns / 1e6;

interface Servers {
  sim: Child;
  gateway?: Child;
  billingOff?: Child;
  /** The gateway with metrics and the request log off (they are on in `gateway`), on a store of its own. */
  quiet?: Child;
  quietApiKey?: string;
  bare?: Child;
  /** A second bare proxy, started with PostgreSQL mode's two nodes: the two together are that scaling's floor. */
  bare2?: Child;
  /** The floor proxy (floor-proxy.ts): non-stream passthrough scenarios, closed loop. */
  floor?: Child;
  apiKey?: string;
  /** PostgreSQL mode: two gateway nodes on one database (the first alone is the one-node run), and their key. */
  pgNodes?: Child[];
  pgApiKey?: string;
  /** Requests sent to the PostgreSQL nodes (warm-ups included) and the time they were under load, for the round trips per request. */
  pgLoad: { requests: number; ms: number };
}

/** The servers in the order of interleaved pass `i`: every other pass reversed, so none always runs right after the same other. */
const passOrder = <T>(items: T[], i: number): T[] => (i % 2 === 0 ? items : [...items].reverse());

/** Runs against the simulator's own credentials: straight to it, or through the bare proxy. */
const upstreamDirect = (via: Via) => via === 'direct' || via === 'bare-proxy' || via === 'bare-proxy-2' || via === 'floor-proxy';

/**
 * A scenario's load against one server: a warm-up, then measured runs whose answers are pooled
 * (an open-loop measurement is split into slices interleaved with the other servers').
 */
class ServerLoad {
  /** The gateway processes under load (none for direct runs). */
  private readonly gwPids: number[];
  private readonly target: Target;
  private readonly agent: http.Agent;
  private readonly results: LoadResult[] = [];
  private readonly cpu = { wallMs: 0, loadgenMs: 0, simulatorMs: 0, gatewayMs: 0, gatewayMainMs: 0, othersMs: 0 };
  private problem: string | undefined;

  constructor(
    private readonly o: Options,
    private readonly servers: Servers,
    private readonly s: Scenario,
    private readonly via: Via,
    private readonly load: { concurrency: number } | { rate: number },
  ) {
    const pg = servers.pgNodes ?? [];
    const targets = {
      direct: [servers.sim],
      gateway: [servers.gateway!],
      'gateway-billing-off': [servers.billingOff!],
      'gateway-quiet': [servers.quiet!],
      'bare-proxy': [servers.bare!],
      'bare-proxy-2': [servers.bare!, servers.bare2!],
      'floor-proxy': [servers.floor!],
      'gateway-pg': pg.slice(0, 1),
      'gateway-pg-2': pg,
    }[via];
    this.gwPids = via === 'direct' ? [] : targets.map((c) => c.pid);
    const key = upstreamDirect(via) ? UPSTREAM_KEY : via.startsWith('gateway-pg') ? servers.pgApiKey!
      : via === 'gateway-quiet' ? servers.quietApiKey! : (servers.apiKey ?? 'none');
    const [port, ...morePorts] = targets.map(portOf);
    this.target = { ...requestTarget(s, port, key), morePorts };
    this.agent = keepAliveAgent('rate' in load ? OPEN_LOOP_SOCKETS : load.concurrency);
  }

  private async go(durationMs: number): Promise<LoadResult> {
    // A server that stops answering must not hang the bench: its connections are cut, the requests fail.
    const watchdog = setTimeout(() => this.agent.destroy(), durationMs + STALL_MS);
    const started = hrtime.bigint();
    try {
      const r = await ('rate' in this.load
        ? openLoop(this.target, this.agent, this.load.rate, durationMs, OPEN_LOOP_SOCKETS)
        : closedLoop(this.target, this.agent, this.load.concurrency, durationMs));
      if (this.via.startsWith('gateway-pg')) {
        this.servers.pgLoad.requests += r.ok + r.errors;
        this.servers.pgLoad.ms += ms(Number(hrtime.bigint() - started));
      }
      return r;
    } finally {
      clearTimeout(watchdog);
    }
  }

  async warmUp(durationMs = this.o.warmupMs): Promise<void> {
    for (const pid of this.gwPids) resetPeakRss(pid);
    this.problem = sampleProblem(this.s, this.via, await this.go(durationMs));
  }

  async run(durationMs: number): Promise<void> {
    const before = cpuSnapshot(this.servers.sim.pid, this.gwPids);
    this.results.push(await this.go(durationMs));
    const used = cpuUse(before, cpuSnapshot(this.servers.sim.pid, this.gwPids));
    for (const k of Object.keys(this.cpu) as (keyof typeof this.cpu)[]) this.cpu[k] += used[k];
  }

  /** Closes the connections (figures() does it too). */
  close(): void {
    this.agent.destroy();
  }

  /** The pooled runs' figures; the connections are closed. */
  figures(): RunFigures {
    this.close();
    const { s, via, load, gwPids, cpu } = this;
    const gwPid = gwPids.length > 0;
    const r = pool(this.results);
    const pct = (cpuMs: number) => (cpuMs / cpu.wallMs) * 100;
    const figures: RunFigures = {
      via,
      loop: 'rate' in load ? 'open' : 'closed',
      ...load,
      ...(this.results.length > 1 ? { slices: this.results.length, sliceLatency: sliceLatency(this.results, s.stream) } : {}),
      ok: r.ok,
      errors: r.errors,
      firstError: r.firstError,
      reqPerSec: r.ok / (r.elapsedNs / 1e9),
      p50Ms: ms(quantile(r.latencyNs, 0.5)),
      p99Ms: ms(quantile(r.latencyNs, 0.99)),
      ...(s.stream ? { ttfbP50Ms: ms(quantile(r.ttfbNs, 0.5)), ttfbP99Ms: ms(quantile(r.ttfbNs, 0.99)) } : {}),
      ...(gwPid
        ? {
            cpuUsPerReq: (cpu.gatewayMs * 1000) / (r.ok + r.errors),
            mainThreadCpuUsPerReq: (cpu.gatewayMainMs * 1000) / (r.ok + r.errors),
            // Several nodes: the largest one's.
            peakRssMb: Math.max(...gwPids.map(peakRssMb)),
          }
        : {}),
      cpuPercent: {
        loadgen: pct(cpu.loadgenMs),
        simulator: pct(cpu.simulatorMs),
        ...(gwPid ? { gateway: pct(cpu.gatewayMs) } : {}),
        others: pct(cpu.othersMs),
      },
      ...(r.sendLateNs ? { sendLateP99Ms: ms(quantile(r.sendLateNs, 0.99)), skipped: r.skipped } : {}),
      problem: this.problem,
    };
    const where = 'rate' in load ? `open ${load.rate}/s` : `closed c=${load.concurrency}`;
    process.stderr.write(
      `  ${s.id.padEnd(24)} ${where.padEnd(14)} ${via.padEnd(20)} ${figures.reqPerSec.toFixed(0).padStart(6)} req/s  ` +
        `p50 ${figures.p50Ms.toFixed(2)} ms  p99 ${figures.p99Ms.toFixed(2)} ms${r.errors ? `  ${r.errors} errors` : ''}\n`,
    );
    return figures;
  }
}

/** Each run's own latency figures, ms (the time to first byte of streams). */
function sliceLatency(results: LoadResult[], stream: boolean): RunFigures['sliceLatency'] {
  const each = (q: (r: LoadResult) => number) => results.map((r) => ms(q(r)));
  return {
    p50Ms: each((r) => quantile(r.latencyNs, 0.5)),
    p99Ms: each((r) => quantile(r.latencyNs, 0.99)),
    ...(stream ? { ttfbP50Ms: each((r) => quantile(r.ttfbNs, 0.5)) } : {}),
  };
}

/** Several runs' answers as one run's. */
function pool(results: LoadResult[]): LoadResult {
  if (results.length === 1) return results[0];
  const sorted = (arrays: Float64Array[]) => {
    const all = new Float64Array(arrays.reduce((n, a) => n + a.length, 0));
    let at = 0;
    for (const a of arrays) {
      all.set(a, at);
      at += a.length;
    }
    return all.sort();
  };
  const late = results.flatMap((r) => (r.sendLateNs ? [r.sendLateNs] : []));
  return {
    ok: results.reduce((n, r) => n + r.ok, 0),
    errors: results.reduce((n, r) => n + r.errors, 0),
    firstError: results.find((r) => r.firstError)?.firstError,
    elapsedNs: results.reduce((n, r) => n + r.elapsedNs, 0),
    latencyNs: sorted(results.map((r) => r.latencyNs)),
    ttfbNs: sorted(results.map((r) => r.ttfbNs)),
    ...(late.length ? { sendLateNs: sorted(late), skipped: results.reduce((n, r) => n + (r.skipped ?? 0), 0) } : {}),
  };
}

/** One warm-up and one measured run of a scenario against one server. */
async function measure(o: Options, servers: Servers, s: Scenario, via: Via, load: { concurrency: number }): Promise<RunFigures> {
  const l = new ServerLoad(o, servers, s, via, load);
  await l.warmUp();
  await l.run(o.durationMs);
  return l.figures();
}

/**
 * Open loop at `rate`: each server warms up, then runs `slices` slices of `sliceMs` interleaved
 * with the other servers' (every other pass in reverse order). The answers are pooled, and each
 * slice's latency figures kept, for the targets' slice-by-slice comparison (report.ts,
 * pairedDifference): a slow spell of the machine lands on one server's slice, and a tail percentile
 * of the pooled answers would show it as that server's.
 */
async function measureOpen(o: Options, servers: Servers, s: Scenario, vias: Via[], rate: number, slices: number, sliceMs: number): Promise<RunFigures[]> {
  const loads = vias.map((via) => new ServerLoad(o, servers, s, via, { rate }));
  for (const l of loads) await l.warmUp();
  for (let i = 0; i < slices; i++) {
    for (const l of passOrder(loads, i)) await l.run(sliceMs);
  }
  return loads.map((l) => l.figures());
}

interface CpuSnapshot {
  at: bigint;
  loadgen: NodeJS.CpuUsage;
  simulatorMs: number;
  gatewayMs: number;
  gatewayMainMs: number;
  machineMs: number;
}

/** `gwPids`: the gateway processes under load, their CPU summed. */
function cpuSnapshot(simPid: number, gwPids: number[]): CpuSnapshot {
  const sum = (f: (pid: number) => number) => gwPids.reduce((n, pid) => n + f(pid), 0);
  return {
    at: hrtime.bigint(),
    loadgen: process.cpuUsage(),
    simulatorMs: cpuMs(simPid),
    gatewayMs: sum(cpuMs),
    gatewayMainMs: sum(mainThreadCpuMs),
    machineMs: machineBusyMs(),
  };
}

/** CPU used between two snapshots, ms: each process's, every other process's on the machine, and the wall time. */
function cpuUse(a: CpuSnapshot, b: CpuSnapshot) {
  const loadgenMs = (b.loadgen.user - a.loadgen.user + b.loadgen.system - a.loadgen.system) / 1000;
  const simulatorMs = b.simulatorMs - a.simulatorMs;
  const gatewayMs = b.gatewayMs - a.gatewayMs;
  return {
    wallMs: ms(Number(b.at - a.at)),
    loadgenMs,
    simulatorMs,
    gatewayMs,
    gatewayMainMs: b.gatewayMainMs - a.gatewayMainMs,
    othersMs: Math.max(0, b.machineMs - a.machineMs - loadgenMs - simulatorMs - gatewayMs),
  };
}

/** Checks the first answer of the warm-up: the client's format, and for the gateway the expected offer. */
function sampleProblem(s: Scenario, via: Via, warm: LoadResult): string | undefined {
  if (!warm.sample) return `no successful answer in the warm-up${warm.firstError ? ` (${warm.firstError})` : ''}`;
  const listing = warm.sample.headers['x-service-listing'];
  if (!upstreamDirect(via) && listing !== s.listing) return `served by offer ${listing ?? '(no x-service-listing header)'}, expected ${s.listing}`;
  return checkSample(s, warm.sample.body);
}

/**
 * The servers a scenario runs against, direct first. The bare proxy only forwards bytes, so it runs
 * where client and upstream speak the same format.
 */
function viasOf(servers: Servers, s: Scenario): Via[] {
  const vias: Via[] = ['direct'];
  if (servers.bare && s.client === s.upstream) vias.push('bare-proxy');
  // Beside the one bare proxy (their rounds pair up); closed loop only (see runOpen).
  if (servers.bare2 && servers.pgNodes && s.client === s.upstream) vias.push('bare-proxy-2');
  // It answers whole JSON answers only; closed loop only (see runOpen).
  if (servers.floor && s.client === s.upstream && !s.stream) vias.push('floor-proxy');
  if (servers.billingOff) vias.push('gateway-billing-off');
  // Metrics and the request log cost the same whatever the conversion: measured on the passthrough scenarios.
  if (servers.quiet && s.client === s.upstream) vias.push('gateway-quiet');
  if (servers.gateway) vias.push('gateway');
  // PostgreSQL mode beside SQLite mode on the passthrough scenarios: the store's cost does not depend on the conversion.
  if (servers.pgNodes && s.client === s.upstream) vias.push('gateway-pg', 'gateway-pg-2');
  return vias;
}

/**
 * V8 compiles a server's hot code over its first seconds under load: in 0.5 s windows from its
 * start, the gateway's CPU per request fell from 1,300 to 250 µs over 3 s, the bare proxy's from
 * 470 to 80 µs over 1.5 s. So before anything is measured each server runs the scenarios it serves
 * for this long in all: the first rounds (and every --quick run) measured the compiler too.
 */
const COMPILER_WARMUP_MS = 5000;

async function warmUpCompilers(o: Options, servers: Servers): Promise<void> {
  const served = o.scenarios.flatMap((s) => viasOf(servers, s).filter((via) => via !== 'direct').map((via) => ({ s, via })));
  const scenariosOf = new Map<Via, number>();
  for (const { via } of served) scenariosOf.set(via, (scenariosOf.get(via) ?? 0) + 1);
  for (const { s, via } of served) {
    const load = new ServerLoad(o, servers, s, via, { concurrency: o.concurrency });
    await load.warmUp(COMPILER_WARMUP_MS / scenariosOf.get(via)!);
    load.close();
  }
}

/**
 * Closed loop: each server `rounds` times, interleaved (direct, bare proxy, billing off, the quiet
 * gateway, the gateway, PostgreSQL's one node and two, then the same in reverse, and so on), so a
 * slow spell of the machine hits every server alike and no server always runs right after the same
 * other one (on this 2-core machine two identical gateways measured back to back differed by 2 to 7%
 * in the second one's favour); each keeps its median run. The pairs whose ratios are judged round by
 * round run next to each other: the gateway beside the quiet one and PostgreSQL's one node, and
 * that beside two nodes.
 */
async function runClosed(o: Options, servers: Servers, s: Scenario): Promise<RunFigures[]> {
  const closed = { concurrency: o.concurrency };
  const vias = viasOf(servers, s);
  const rounds = new Map<Via, RunFigures[]>(vias.map((v) => [v, []]));
  for (let i = 0; i < o.rounds; i++) {
    for (const via of passOrder(vias, i)) rounds.get(via)!.push(await measure(o, servers, s, via, closed));
  }
  return vias.map((via) => medianRun(rounds.get(via)!));
}

/** Open loop at each rate (measureOpen). */
async function runOpen(o: Options, servers: Servers, s: Scenario): Promise<RunFigures[]> {
  const runs: RunFigures[] = [];
  // Two bare proxies answer for throughput only (the scaling of the two PostgreSQL nodes), the floor proxy for CPU.
  const openVias = viasOf(servers, s).filter((via) => via !== 'bare-proxy-2' && via !== 'floor-proxy');
  for (const rate of o.rates) {
    // The latency targets' runs (passthrough, at the rate judgedRate gives): slices long enough for
    // a p99 of their own (3,000 answers at 1,000 req/s for 3 s). Other open-loop runs share
    // --duration among the slices.
    const judged = rate === judgedRate(o, s);
    runs.push(...(await measureOpen(o, servers, s, openVias, rate, o.rounds, judged ? o.durationMs : o.durationMs / o.rounds)));
  }
  return runs;
}

/**
 * The run with the median throughput (the lower middle one of an even count), marked with the
 * round count and every round's throughput and CPU per request in round order.
 */
function medianRun(runs: RunFigures[]): RunFigures {
  const sorted = [...runs].sort((a, b) => a.reqPerSec - b.reqPerSec);
  const peaks = runs.flatMap((r) => (r.peakRssMb === undefined ? [] : [r.peakRssMb]));
  const cpu = runs.flatMap((r) => (r.cpuUsPerReq === undefined ? [] : [r.cpuUsPerReq]));
  return {
    ...sorted[Math.floor((sorted.length - 1) / 2)],
    rounds: runs.length,
    roundReqPerSec: runs.map((r) => r.reqPerSec),
    // Paired round by round with another server's, like the throughput (the CPU targets are ratios to the bare proxy's).
    ...(cpu.length === runs.length ? { roundCpuUsPerReq: cpu } : {}),
    ...(peaks.length ? { peakRssMb: Math.max(...peaks) } : {}),
  };
}

const portOf = (c: Child) => Number(new URL(c.url).port);

/** A step the bench can go without (starting a server, a setup, a measurement): on failure says why and goes on. */
async function optionalStep<T>(what: string, step: () => Promise<T>, untested: string[]): Promise<T | undefined> {
  try {
    return await step();
  } catch (err) {
    untested.push(`${what}: ${(err as Error).message}`);
    process.stderr.write(`!! ${what} failed, what needs it is skipped:\n${(err as Error).message}\n`);
    return undefined;
  }
}

async function main(): Promise<void> {
  const o = options(process.argv.slice(2));
  if (!o) return void process.stdout.write(USAGE + '\n');
  // Runs of --duration per server: the closed rounds, the open-loop rates, the latency rate's longer slices.
  const passes = (s: Scenario) => o.rounds + o.rates.length + (judgedRate(o, s) === undefined ? 0 : o.rounds - 1);
  // With PostgreSQL mode, two bare proxies run the closed rounds too; on plain passthrough, the floor proxy.
  const floorRounds = (s: Scenario) => (s.stream ? 0 : o.rounds);
  const runsPerScenario = (s: Scenario) => (s.client !== s.upstream ? 3 * passes(s) : (o.postgres ? 6 * passes(s) + o.rounds : 4 * passes(s)) + floorRounds(s));
  const estimateS = ((o.durationMs + o.warmupMs) / 1000) * o.scenarios.reduce((n, s) => n + runsPerScenario(s), 0);
  process.stderr.write(`bench: ${o.scenarios.length} scenarios, about ${Math.ceil(estimateS / 10) * 10} s of load\n`);

  process.stderr.write('timing request validation in-process…\n');
  const validation: ValidationShare[] = measureValidation(o.warmupMs > 300 ? 500 : 200);
  process.stderr.write('timing the billing hooks in-process…\n');
  const hooksMs = o.warmupMs > 300 ? 2000 : 500;
  const billingHooks = { busy: await measureBillingHooks(hooksMs, 8), single: await measureBillingHooks(hooksMs, 1) };
  process.stderr.write('timing the worst bodies the limits allow in-process…\n');
  const worstBodies = measureWorstBodies(3);
  const resent = measureResentConversation();
  process.stderr.write('timing the rate limiter in-process…\n');
  const rateLimitHooks = measureRateLimitHooks(hooksMs);
  process.stderr.write('timing the metrics recorder in-process…\n');
  const metricsHooks = await measureMetricsHooks(hooksMs);

  const dir = mkdtempSync(join(tmpdir(), 'gateway-bench-'));
  const untested: string[] = [];
  const children: Child[] = [];
  const results: ScenarioFigures[] = [];
  const startupRss: Record<string, number> = {};
  const placement: string[] = [];
  let pgDb: BenchDatabase | undefined;
  let pgTransactionsAtStart = 0;
  let pgStartedAt = 0;
  let pgTrips: RoundTrips | undefined;
  const allocation: HeapAllocation = {};
  try {
    const sim = await startSimulatorProcess();
    children.push(sim);
    const servers: Servers = { sim, pgLoad: { requests: 0, ms: 0 } };
    // As an operator runs it: metrics on, and a request line per request (the default).
    const onConfig = writeConfig(dir, 'billing-on', { ...gatewayConfig(sim.url, join(dir, 'billing-on.db')), metrics: { host: '127.0.0.1', port: 0 } });
    const quietConfig = writeConfig(dir, 'quiet', { ...gatewayConfig(sim.url, join(dir, 'quiet.db')), log: { requests: false } });
    const offConfig = writeConfig(dir, 'billing-off', gatewayConfig(sim.url, join(dir, 'billing-off.db'), BILLING_OFF_PLUGINS));
    servers.apiKey = await optionalStep('account and key setup (gateway accounts/credits/keys commands)', () => createBenchKey(onConfig), untested);
    if (servers.apiKey) servers.gateway = await optionalStep('gateway (billing on)', () => startGatewayProcess('gateway', onConfig), untested);
    servers.billingOff = await optionalStep('gateway (billing off)', () => startGatewayProcess('gateway-billing-off', offConfig), untested);
    servers.quietApiKey = await optionalStep('account and key setup for the gateway without metrics and request log', () => createBenchKey(quietConfig), untested);
    if (servers.quietApiKey) servers.quiet = await optionalStep('gateway (metrics and request log off)', () => startGatewayProcess('gateway-quiet', quietConfig), untested);
    servers.bare = await optionalStep('bare node:http proxy (the reference)', () => startBareProxyProcess(sim.url), untested);
    servers.floor = await optionalStep('floor proxy (the transport and both bodies)', () => startFloorProxyProcess(sim.url), untested);
    if (o.postgres) {
      const db = await createBenchDatabase();
      if (typeof db === 'string') {
        untested.push(`PostgreSQL mode: ${db}`);
        process.stderr.write(`!! PostgreSQL mode skipped: ${db}\n`);
      } else {
        pgDb = db;
        const pgConfig = writeConfig(dir, 'postgres', gatewayConfig(sim.url, { postgres: db.url }));
        servers.pgApiKey = await optionalStep('PostgreSQL mode: account and key setup', () => createBenchKey(pgConfig), untested);
        // Counted from before the nodes start (the setup commands have exited, so their counts are in): the nodes' whole life.
        pgTransactionsAtStart = await db.transactions();
        pgStartedAt = Date.now();
        const nodes: Child[] = [];
        for (const name of servers.pgApiKey ? ['gateway-pg-a', 'gateway-pg-b'] : []) {
          const node = await optionalStep(`PostgreSQL mode: gateway node ${name}`, () => startGatewayProcess(name, pgConfig), untested);
          if (!node) break;
          nodes.push(node);
          children.push(node); // stopped at the end even if the other does not start
          startupRss[name] = peakRssMb(node.pid);
        }
        if (nodes.length === 2) servers.pgNodes = nodes;
        if (nodes.length === 2 && servers.bare) servers.bare2 = await optionalStep('a second bare proxy (the floor of two nodes)', () => startBareProxyProcess(sim.url, {}, 'bare-proxy-b'), untested);
      }
    }
    for (const c of [servers.gateway, servers.billingOff, servers.quiet, servers.bare, servers.bare2, servers.floor]) {
      if (!c) continue;
      children.push(c);
      startupRss[c.name] = peakRssMb(c.pid);
    }
    placement.push(...placementLines(children));
    process.stderr.write(placement.join('\n') + '\n');
    process.stderr.write(`warming up each server's compiled code (${COMPILER_WARMUP_MS / 1000} s of load each)…\n`);
    await warmUpCompilers(o, servers);
    // Every scenario's closed loop before any open loop: an open loop the machine cannot keep up with
    // (1,000 streams a second on a slow day) leaves up to OPEN_LOOP_SOCKETS requests in flight, and
    // the heap they grew stays with the process, in every later run's peak RSS (in one full run with
    // the loops in turn, the closed loops after one peaked at up to 165 MB, the first before any at 129).
    const closedRuns: RunFigures[][] = [];
    for (const s of o.scenarios) {
      process.stderr.write(`${s.title}: closed loop\n`);
      closedRuns.push(await runClosed(o, servers, s));
    }
    for (const [i, s] of o.scenarios.entries()) {
      process.stderr.write(`${s.title}: open loop\n`);
      results.push({ scenario: s, runs: [...closedRuns[i], ...(await runOpen(o, servers, s))] });
    }
    // Heap allocation per request: processes of their own with the GC trace on, the gateway as the
    // timed one runs (metrics and request log on), on the first same-format non-stream scenario.
    const traced = o.scenarios.find((s) => s.client === s.upstream && !s.stream);
    if (traced) {
      process.stderr.write(`measuring heap allocation per request (${traced.id})…\n`);
      const cfg = writeConfig(dir, 'gc-trace', { ...gatewayConfig(sim.url, join(dir, 'gc-trace.db')), metrics: { host: '127.0.0.1', port: 0 } });
      // Longer than a timed run: a window's ends are off by the few trace lines still in stdout's buffer.
      const warmupMs = Math.max(o.warmupMs, 1000);
      const measureMs = Math.max(2 * o.durationMs, 2000);
      allocation.scenario = traced.id;
      allocation.gateway = await optionalStep('heap allocation per request (gateway)', async () => {
        const key = await createBenchKey(cfg);
        return measureAllocation((opts) => startGatewayProcess('gateway-gc-trace', cfg, opts), (c) => requestTarget(traced, portOf(c), key), o.concurrency, warmupMs, measureMs);
      }, untested);
      allocation.bare = await optionalStep('heap allocation per request (bare proxy)', () =>
        measureAllocation((opts) => startBareProxyProcess(sim.url, opts), (c) => requestTarget(traced, portOf(c), 'none'), o.concurrency, warmupMs, measureMs),
      untested);
    }
    if (pgDb && servers.pgNodes && servers.pgLoad.requests > 0) {
      process.stderr.write('PostgreSQL mode: counting the database transactions of idle nodes (about 20 s)…\n');
      pgTrips = await measureRoundTrips(pgDb, servers.pgNodes, servers.pgLoad, pgTransactionsAtStart, pgStartedAt);
    }
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    rmSync(dir, { recursive: true, force: true });
    await pgDb?.drop().catch((err) => process.stderr.write(`!! could not drop the bench database: ${err.message}\n`));
  }
  report(o, results, validation, billingHooks, rateLimitHooks, metricsHooks, worstBodies, resent, startupRss, placement, children, untested, pgTrips, allocation);
}

/** Database transactions (round trips, at least: a transaction of several statements is more) per request in PostgreSQL mode. */
interface RoundTrips {
  requests: number;
  /** Over the nodes' whole life, housekeeping of idle time included. */
  transactions: number;
  grossPerRequest: number;
  /** Both idle nodes' transactions per second (heartbeats, change polls, batch timers). */
  idlePerSecond: number;
  /** Per request with the idle rate taken off for the time the nodes were not under load. */
  netPerRequest: number;
}

/** Idle-time transactions first (after the stats of the load have been flushed), then the whole life's, with the nodes stopped. */
async function measureRoundTrips(db: BenchDatabase, nodes: Child[], load: { requests: number; ms: number }, atStart: number, startedAt: number): Promise<RoundTrips> {
  // Backends report their counts up to ~10 s late; two reads 10 s apart after 11 s of quiet differ by 10 s of idle traffic.
  const wait = (msecs: number) => new Promise((r) => setTimeout(r, msecs));
  await wait(11_000);
  const a = await db.transactions();
  await wait(10_000);
  const idlePerSecond = ((await db.transactions()) - a) / 10;
  const lifeMs = Date.now() - startedAt;
  await Promise.all(nodes.map((n) => n.stop())); // their backends exit and flush what they counted
  await wait(500);
  const transactions = (await db.transactions()) - atStart;
  const idleMs = lifeMs - load.ms;
  return {
    requests: load.requests,
    transactions,
    grossPerRequest: transactions / load.requests,
    idlePerSecond,
    netPerRequest: (transactions - (idlePerSecond * idleMs) / 1000) / load.requests,
  };
}

/** What ran where. */
function placementLines(children: Child[]): string[] {
  return [
    `machine: ${cpus().length} CPUs (${cpus()[0]?.model.trim()}), node ${process.version}, load average ${loadavg()[0].toFixed(2)}; ` +
      'processes are not pinned, the OS schedules them',
    `  load generator + in-process validation timing: this process, pid ${process.pid}`,
    ...children.map((c) => `  ${c.name}: child process pid ${c.pid}, ${c.url}`),
    '  one server is under load at a time (PostgreSQL mode with 2 nodes: both, the load generator sending to each in turn, ' +
      'their CPU summed); direct runs send the same requests straight to the simulator',
  ];
}

function report(
  o: Options,
  results: ScenarioFigures[],
  validation: ValidationShare[],
  billingHooks: { busy: { usPerRequest: number }; single: { usPerRequest: number } },
  rateLimitHooks: { usPerRequest: number },
  metricsHooks: MetricsCost,
  worstBodies: WorstBodyFigures[],
  resent: ResentFigures,
  startupRss: Record<string, number>,
  placement: string[],
  children: Child[],
  untested: string[],
  pgTrips: RoundTrips | undefined,
  allocation: HeapAllocation,
): void {
  /** A server's peak RSS over its runs (of one loop, or all), its startup included. */
  const gatewayPeak = (via: Via, name: string, loop?: 'closed') => {
    const peaks = results.flatMap((sf) => sf.runs.filter((r) => r.via === via && (!loop || r.loop === loop)).map((r) => r.peakRssMb ?? 0));
    return peaks.length ? Math.max(startupRss[name] ?? 0, ...peaks) : undefined;
  };
  const peak = {
    gateway: gatewayPeak('gateway', 'gateway'),
    gatewayClosed: gatewayPeak('gateway', 'gateway', 'closed'),
    bareClosed: gatewayPeak('bare-proxy', 'bare-proxy', 'closed'),
    billingOff: gatewayPeak('gateway-billing-off', 'gateway-billing-off'),
    bare: gatewayPeak('bare-proxy', 'bare-proxy'),
    postgresNode: gatewayPeak('gateway-pg-2', 'gateway-pg-a'),
  };
  for (const v of validation) {
    const sf = results.find((r) => r.scenario.client === v.route && r.scenario.upstream === v.route && !r.scenario.stream)
      ?? results.find((r) => r.scenario.client === v.route && r.scenario.upstream === v.route);
    v.gatewayCpuUs = sf?.runs.find((r) => r.via === 'gateway' && r.loop === 'closed')?.cpuUsPerReq;
    if (v.gatewayCpuUs) v.percentOfRequestCpu = (v.validateUs / v.gatewayCpuUs) * 100;
  }
  const atRate = latencyRate(o);
  const targets = checkTargets(results, validation, atRate, {
    peakRssMb: { gateway: peak.gatewayClosed, bare: peak.bareClosed, gatewayWholeRun: peak.gateway },
    billingHooksUs: { busy: billingHooks.busy.usPerRequest, single: billingHooks.single.usPerRequest },
  }, firstByteRate(o));

  const out = [
    '',
    `Gateway benchmark: closed loop at ${o.concurrency} in flight (median of ${o.rounds} interleaved runs per server), ` +
      `open loop at ${o.rates.join(' and ')} req/s evenly paced` +
        (o.rounds > 1
          ? ` (each run in ${o.rounds} slices, interleaved across the servers and pooled; passthrough at the judged rate, ${latencyRate(o)} ` +
            `req/s plain and ${firstByteRate(o)} streams: ${o.rounds} slices of ${o.durationMs / 1000} s)`
          : '') +
        `; ${o.durationMs / 1000} s per run after ${o.warmupMs / 1000} s of warm-up.`,
    'bare proxy: a node:http pass-through proxy (bench/bare-proxy.ts), the reference the targets are scaled by.',
    'Ratios are against the direct run (the same requests straight to the simulator) under the same load in this run.',
    '+p50/+p99/+TTFB: gateway minus direct (ms). TTFB: first body byte. CPU µs/req: the gateway process (all threads; its main thread, the event loop, in brackets).',
    'CPU% gen/sim/gw/other: share of one core used by the load generator, the simulator, the gateway and all other processes.',
    'late p99: how late the open loop sent its requests against their schedule (ms); latency is timed from the actual send.',
    '',
    ...placement,
    '',
    ...results.flatMap((sf) => [scenarioReport(sf), '']),
    'Request validation (in-process, this process):',
    validationReport(validation),
    '',
    `Billing hooks on the event loop (in-process, this process; auth + budget-hold + metering with a real store): ` +
      `${billingHooks.busy.usPerRequest.toFixed(1)} µs per request at 8 requests per event-loop turn, ` +
      `${billingHooks.single.usPerRequest.toFixed(1)} µs at one per turn`,
    `Rate limiter on the event loop (in-process; the rate-limit hooks and their six x-ratelimit-* headers, 4096 keys): ` +
      `${rateLimitHooks.usPerRequest.toFixed(2)} µs per request`,
    `Metrics on the event loop (in-process; the recorder's call at a request's end against metrics off, 8 models, 16 listings): ` +
      `${(metricsHooks.usPerRequest * 1000).toFixed(0)} ns per request on, ${(metricsHooks.offUsPerRequest * 1000).toFixed(1)} ns off; one scrape ${metricsHooks.scrapeMs.toFixed(1)} ms`,
    '',
    'Worst bodies the request limits allow, event-loop time per request (in-process, this process; median of 3):',
    worstBodyReport(worstBodies),
    '',
    resentConversationReport(resent),
    '',
    `Peak RSS: gateway ${peak.gateway?.toFixed(1) ?? '-'} MB, gateway billing-off ${peak.billingOff?.toFixed(1) ?? '-'} MB, ` +
      `bare proxy ${peak.bare?.toFixed(1) ?? '-'} MB, gateway postgres node ${peak.postgresNode?.toFixed(1) ?? '-'} MB ` +
      `(right after start: ${Object.entries(startupRss).map(([name, mb]) => `${name} ${mb.toFixed(1)} MB`).join(', ') || '-'})`,
    '',
    ...(allocation.scenario ? [allocationReport(allocation), ''] : []),
    ...(pgTrips
      ? [
          `PostgreSQL mode, database transactions per request (pg_stat_database, ${pgTrips.requests} requests, warm-ups included): ` +
            `${pgTrips.netPerRequest.toFixed(2)} net of idle housekeeping (${pgTrips.idlePerSecond.toFixed(1)}/s for both idle nodes), ` +
            `${pgTrips.grossPerRequest.toFixed(2)} gross (${pgTrips.transactions} over the nodes' life)`,
          '',
        ]
      : []),
    'Targets (the core ones relative to the bare proxy in this run, issue 18; billing on, passthrough scenarios): gateway and',
    'bare proxy are the two figures of the worst scenario; measured is their ratio (closed loop: the median of the rounds\' own',
    'ratios) or the difference of their added latencies over direct (the median of the slices\' own differences); rounds',
    'min–max: that ratio round by round, or that difference slice by slice.',
    targetsReport(targets),
    ...(untested.length ? ['', 'Not measured:', ...untested.map((u) => `  - ${u.split('\n')[0]}`)] : []),
    '',
  ];
  process.stdout.write(out.join('\n') + '\n');

  const resultsDir = join(packageRoot(), 'bench', 'results');
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, 'latest.json');
  const json = {
    finishedAt: new Date().toISOString(),
    options: { ...o, scenarios: o.scenarios.map((s) => s.id) },
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model.trim(), node: process.version },
    processes: [{ name: 'load generator', pid: process.pid }, ...children.map((c) => ({ name: c.name, pid: c.pid, url: c.url }))],
    placement,
    scenarios: results,
    validation,
    billingHooksUsPerRequest: billingHooks.busy.usPerRequest,
    billingHooksUsPerRequestOnePerTurn: billingHooks.single.usPerRequest,
    worstBodies,
    resentConversation: resent,
    rateLimitHooksUsPerRequest: rateLimitHooks.usPerRequest,
    metricsHooks,
    peakRssMb: peak,
    startupPeakRssMb: startupRss,
    heapAllocation: allocation,
    targets,
    untested,
    ...(pgTrips ? { postgresRoundTrips: pgTrips } : {}),
  };
  writeFileSync(file, JSON.stringify(json, null, 2) + '\n');
  process.stdout.write(`results written to ${file}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exitCode = 1;
});
