// The bench's figures, their tables, and the comparison with the performance targets.
import type { Scenario } from './scenarios.js';
import { streamPairs } from './scenarios.js';
import type { ValidationFigures } from './validation.js';

/**
 * gateway-pg: billing on, PostgreSQL store, one node; gateway-pg-2: two such nodes, the load spread
 * round-robin; bare-proxy-2: two bare proxies spread the same way (the floor of that scaling);
 * floor-proxy: the gateway's transport and JSON bodies, nothing else (floor-proxy.ts).
 */
export type Via = 'direct' | 'gateway' | 'gateway-billing-off' | 'gateway-quiet' | 'bare-proxy' | 'bare-proxy-2' | 'floor-proxy' | 'gateway-pg' | 'gateway-pg-2';

export interface RunFigures {
  via: Via;
  loop: 'closed' | 'open';
  /** Closed loop: requests in flight. */
  concurrency?: number;
  /** Open loop: offered requests per second. */
  rate?: number;
  /** Closed loop: the median of this many interleaved runs. */
  rounds?: number;
  /** Closed loop: each round's throughput, in run order. */
  roundReqPerSec?: number[];
  /** Closed loop, gateway and bare-proxy runs: each round's CPU per request, in run order. */
  roundCpuUsPerReq?: number[];
  /** Open loop: the run was this many slices, interleaved with the other servers' and pooled. */
  slices?: number;
  /** Open loop in slices: each slice's own latency figures, ms, in run order (pooled in p50Ms, p99Ms, ttfbP50Ms). */
  sliceLatency?: { p50Ms: number[]; p99Ms: number[]; ttfbP50Ms?: number[] };
  ok: number;
  errors: number;
  firstError?: string;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  ttfbP50Ms?: number;
  ttfbP99Ms?: number;
  /** Gateway and bare-proxy runs: its CPU time (all threads, user + system) per request, µs. */
  cpuUsPerReq?: number;
  /** Gateway and bare-proxy runs: the same, of the main thread (the event loop) alone. */
  mainThreadCpuUsPerReq?: number;
  /** Gateway runs: its peak RSS during the run (warm-up included), MB. */
  peakRssMb?: number;
  /** Share of one core each process used during the measured run; `others`: every other process of the machine. */
  cpuPercent: { loadgen: number; simulator: number; gateway?: number; others: number };
  /** Open loop: p99 of how late sends left against their schedule, ms. */
  sendLateP99Ms?: number;
  /** Open loop: due requests not sent because too many were unanswered (the server fell behind). */
  skipped?: number;
  /** Why the sample answer was not the expected one (absent when it was). */
  problem?: string;
}

export interface ScenarioFigures {
  scenario: Scenario;
  runs: RunFigures[];
}

export interface TargetCheck {
  name: string;
  goal: string;
  measured: string;
  /** Targets relative to the bare proxy: the gateway's figure and the bare proxy's (of the worst scenario). */
  gateway?: string;
  bare?: string;
  /** Lowest–highest of the measured figure round by round, where interleaved rounds pair up. */
  spread?: string;
  /** Which scenario gave the worst figure. */
  worst?: string;
  /** undefined: not measured. */
  pass?: boolean;
}

export interface ValidationShare extends ValidationFigures {
  /** The gateway's CPU time per request of this route's passthrough non-stream scenario, µs. */
  gatewayCpuUs?: number;
  /** validateUs / gatewayCpuUs, %. */
  percentOfRequestCpu?: number;
}

/** Other processes' CPU use (% of one core) above which a run's figures are flagged. */
const BUSY_PERCENT = 20;

const VIA_LABEL: Record<Via, string> = {
  direct: 'direct',
  gateway: 'gateway',
  'gateway-billing-off': 'gw billing-off',
  'gateway-quiet': 'gw no metrics/log',
  'bare-proxy': 'bare proxy',
  'bare-proxy-2': '2 bare proxies',
  'floor-proxy': 'floor proxy',
  'gateway-pg': 'gw postgres 1 node',
  'gateway-pg-2': 'gw postgres 2 nodes',
};
const label = (r: RunFigures) => `${r.loop === 'closed' ? `closed c=${r.concurrency}` : `open ${r.rate}/s`} ${VIA_LABEL[r.via]}`;

/** The direct run under the same load. */
export function baselineOf(runs: RunFigures[], r: RunFigures): RunFigures | undefined {
  return runs.find((d) => d.via === 'direct' && d.loop === r.loop && d.rate === r.rate && d.concurrency === r.concurrency);
}

function find(runs: RunFigures[], via: Via, loop: 'closed' | 'open', rate?: number): RunFigures | undefined {
  return runs.find((r) => r.via === via && r.loop === loop && (rate === undefined || r.rate === rate));
}

const fixed = (v: number | undefined, digits: number) => (v === undefined || !Number.isFinite(v) ? '-' : v.toFixed(digits));
const signed = (v: number | undefined) => (v === undefined || !Number.isFinite(v) ? '-' : `${v >= 0 ? '+' : ''}${v.toFixed(2)}`);
const ratio = (a: number | undefined, b: number | undefined) => (a !== undefined && b ? a / b : undefined);

/** Per-round series of closed-loop runs, and the figure of a single run each stands for. */
type RoundSeries = 'roundReqPerSec' | 'roundCpuUsPerReq';
const SINGLE: Record<RoundSeries, 'reqPerSec' | 'cpuUsPerReq'> = { roundReqPerSec: 'reqPerSec', roundCpuUsPerReq: 'cpuUsPerReq' };

/** Each round's `a` / `b`, when both ran the same interleaved rounds. */
function roundRatios(a: RunFigures | undefined, b: RunFigures | undefined, series: RoundSeries = 'roundReqPerSec'): number[] | undefined {
  const x = a?.[series], y = b?.[series];
  return x && y && x.length === y.length && x.length > 1 ? x.map((v, i) => v / y[i]) : undefined;
}

/**
 * `a` against `b`. With interleaved rounds: the median of the round-by-round ratios, each from two
 * runs measured back to back, so a machine that is slower for a while slows both sides of a ratio;
 * a ratio of the two medians can pair runs from different rounds. Of an even count, the middle one
 * on the worse side, so a target is not passed on the kinder pick: the lower for throughput, the
 * higher for CPU. With one round: the plain ratio.
 */
function pairedRatio(a: RunFigures | undefined, b: RunFigures | undefined, series: RoundSeries): number | undefined {
  const rounds = roundRatios(a, b, series);
  if (!rounds) return ratio(a?.[SINGLE[series]], b?.[SINGLE[series]]);
  const middle = (rounds.length - 1) / 2;
  return [...rounds].sort((p, q) => p - q)[series === 'roundCpuUsPerReq' ? Math.ceil(middle) : Math.floor(middle)];
}

/**
 * The open-loop rate a scenario's latency is judged at (checkTargets: its `plain` and `streams`):
 * a plain request's p50 and p99 at `atRate`, a stream's first byte at `firstByteRate`; none for a
 * converted scenario, which the bare proxy cannot serve.
 */
export function latencyJudgedAt(s: Scenario, atRate: number, firstByteRate: number): number | undefined {
  if (s.client !== s.upstream) return undefined;
  return s.stream ? firstByteRate : atRate;
}

/** Open-loop latency figures that are also kept slice by slice. */
type LatencyKey = 'p50Ms' | 'p99Ms' | 'ttfbP50Ms';

/**
 * `a`'s latency figure minus `b`'s. Where both ran in as many interleaved slices: the median of the
 * slice-by-slice differences (of an even count the higher middle one), with those differences as
 * its rounds. A tail percentile of pooled answers is the machine's worst moment in any of either
 * side's slices: one stall of the shared cores (another process's burst) makes p99 whichever server
 * it fell on. Pooled figures without slices: their plain difference.
 */
function pairedDifference(a: RunFigures | undefined, b: RunFigures | undefined, key: LatencyKey): { value: number; rounds?: number[] } | undefined {
  const x = a?.sliceLatency?.[key], y = b?.sliceLatency?.[key];
  if (x && y && x.length === y.length && x.length > 1) {
    const rounds = x.map((v, i) => v - y[i]);
    return { value: [...rounds].sort((p, q) => p - q)[Math.ceil((rounds.length - 1) / 2)], rounds };
  }
  const va = a?.[key], vb = b?.[key];
  return va === undefined || vb === undefined ? undefined : { value: va - vb };
}

/** Throughput of `a` against `b`, paired round by round (see pairedRatio). */
export const pairedThroughputRatio = (a: RunFigures | undefined, b: RunFigures | undefined) => pairedRatio(a, b, 'roundReqPerSec');

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(header), ...rows.map(line)].join('\n');
}

export function scenarioReport(sf: ScenarioFigures): string {
  const { scenario: s, runs } = sf;
  const rows = runs.map((r) => {
    const d = r.via === 'direct' ? undefined : baselineOf(runs, r);
    const cpu = r.cpuPercent;
    return [
      label(r),
      fixed(r.reqPerSec, 0),
      r.via === 'direct' ? '1.00' : fixed(ratio(r.reqPerSec, d?.reqPerSec), 2),
      fixed(r.p50Ms, 2),
      fixed(r.p99Ms, 2),
      d ? signed(r.p50Ms - d.p50Ms) : '',
      d ? signed(r.p99Ms - d.p99Ms) : '',
      s.stream ? fixed(r.ttfbP50Ms, 2) : '',
      s.stream && d ? signed(r.ttfbP50Ms! - d.ttfbP50Ms!) : '',
      r.cpuUsPerReq === undefined ? '' : `${fixed(r.cpuUsPerReq, 0)} (${fixed(r.mainThreadCpuUsPerReq, 0)})`,
      fixed(r.peakRssMb, 1),
      `${fixed(cpu.loadgen, 0)}/${fixed(cpu.simulator, 0)}/${fixed(cpu.gateway, 0)}/${fixed(cpu.others, 0)}`,
      r.loop === 'open' ? fixed(r.sendLateP99Ms, 2) : '',
      String(r.errors),
    ];
  });
  const out = [
    `${s.title}   [${s.id}: model ${s.model}, expected offer ${s.listing}]`,
    table(
      ['run', 'req/s', 'x direct', 'p50 ms', 'p99 ms', '+p50', '+p99', 'TTFB p50', '+TTFB', 'CPU µs/req (main)', 'RSS MB', 'CPU% gen/sim/gw/other', 'late p99', 'errors'],
      rows,
    ),
  ];
  const on = find(runs, 'gateway', 'closed');
  const off = find(runs, 'gateway-billing-off', 'closed');
  if (on && off) {
    const rounds = roundRatios(on, off);
    out.push(`billing on / billing off throughput: ${fixed(pairedThroughputRatio(on, off), 3)}` + (rounds
      ? ` (median of the ${rounds.length} rounds' ratios; ratio of the medians ${fixed(ratio(on.reqPerSec, off.reqPerSec), 3)}); ` +
        `round by round ${rounds.map((x) => fixed(x, 2)).join(', ')}`
      : ''));
  }
  for (const r of runs) {
    if (r.cpuPercent.others > BUSY_PERCENT)
      out.push(`!! ${label(r)}: other processes used ${r.cpuPercent.others.toFixed(0)}% of a core meanwhile: not a reliable figure`);
    if (r.skipped)
      out.push(`!! ${label(r)}: ${r.skipped} requests not sent (too many unanswered): the server does not keep up with this rate`);
    if (r.problem) out.push(`!! ${label(r)}: ${r.problem}`);
    if (r.firstError) out.push(`!! ${label(r)}: ${r.errors} errors, first: ${r.firstError}`);
  }
  return out.join('\n');
}

/**
 * A scenario's figure for a target: the value judged, and for a target relative to the bare proxy
 * the two figures it comes from and its value round by round (where rounds pair up).
 */
interface Figure {
  value: number;
  gateway?: number;
  bare?: number;
  rounds?: number[];
}

interface Worst extends Figure {
  where: string;
}

/** The worst figure over the items that have one. */
function worst<T>(items: T[], figure: (t: T) => Figure | number | undefined, where: (t: T) => string, higherIsWorse: boolean): Worst | undefined {
  let w: Worst | undefined;
  for (const item of items) {
    const f = figure(item);
    const fig = typeof f === 'number' ? { value: f } : f;
    if (fig === undefined || !Number.isFinite(fig.value)) continue;
    if (!w || (higherIsWorse ? fig.value > w.value : fig.value < w.value)) w = { ...fig, where: where(item) };
  }
  return w;
}

/** Lowest–highest of a figure round by round. */
const spreadOf = (rounds: number[] | undefined, show: (v: number) => string) =>
  rounds ? `${show(Math.min(...rounds))}–${show(Math.max(...rounds))}` : undefined;

/** `show` formats the judged value; `side` the gateway's and the bare proxy's own figures. */
const check = (
  name: string,
  goal: string,
  limit: number,
  higherIsWorse: boolean,
  w: Worst | undefined,
  show: (v: number) => string,
  side: (v: number) => string = show,
): TargetCheck => ({
  name,
  goal,
  measured: w ? show(w.value) : 'not measured',
  gateway: w?.gateway === undefined ? undefined : side(w.gateway),
  bare: w?.bare === undefined ? undefined : side(w.bare),
  spread: spreadOf(w?.rounds, show),
  worst: w?.where,
  pass: w ? (higherIsWorse ? w.value <= limit : w.value >= limit) : undefined,
});

/** A figure shown with the targets for scale, not judged. */
const info = (name: string, w: Worst | undefined, show: (v: number) => string, side?: (v: number) => string): TargetCheck =>
  ({ ...check(name, '', NaN, true, w, show, side), pass: undefined });

/** Figures measured outside the scenarios' runs. */
export interface OtherFigures {
  /** Peak RSS over the whole run (startup, warm-ups and both loops), MB. */
  /**
   * Peak RSS, MB: the gateway's and the bare proxy's over the closed-loop runs (the target's
   * 50-connection load), startup included; the gateway's over the whole run (open loops too) for scale.
   */
  peakRssMb?: { gateway?: number; bare?: number; gatewayWholeRun?: number };
  /** Billing hooks' event-loop time per request (bench/billing-hooks.ts), µs: `busy` at 8 requests per turn, `single` at 1. */
  billingHooksUs?: { busy: number; single: number };
}

/**
 * Each target against its worst figure: latency targets at the open-loop rate `atRate` (a plain
 * request's p50 and p99), the first stream byte at `firstByteRate`. The core targets (issue 18) are
 * relative to the bare node:http proxy measured in the same run, so they judge the gateway's own
 * cost and not how fast this machine is today.
 */
export function checkTargets(results: ScenarioFigures[], validation: ValidationShare[], atRate: number, other: OtherFigures = {}, firstByteRate = atRate): TargetCheck[] {
  const gw = (sf: ScenarioFigures, loop: 'closed' | 'open', rate?: number) => find(sf.runs, 'gateway', loop, rate);
  const closed = (sf: ScenarioFigures, via: Via) => find(sf.runs, via, 'closed');
  const open = (sf: ScenarioFigures, via: Via, rate = atRate) => find(sf.runs, via, 'open', rate);
  /** `via`'s latency over direct's, pooled, at `rate`. */
  const added = (sf: ScenarioFigures, key: LatencyKey, via: Via, rate: number) => {
    const r = open(sf, via, rate);
    const d = r && baselineOf(sf.runs, r);
    return r && d && r[key] !== undefined && d[key] !== undefined ? r[key]! - d[key]! : undefined;
  };
  /**
   * What `via` adds over direct beyond what the bare proxy adds, at `rate`: any proxy hop's cost
   * left out. Direct cancels out of the difference, which is paired slice by slice (pairedDifference);
   * gateway and bare proxy show each one's pooled figure over direct.
   */
  const addedOverBare = (sf: ScenarioFigures, key: LatencyKey, via: Via = 'gateway', rate = atRate): Figure | undefined => {
    const diff = pairedDifference(open(sf, via, rate), open(sf, 'bare-proxy', rate), key);
    const g = added(sf, key, via, rate);
    const b = added(sf, key, 'bare-proxy', rate);
    return diff === undefined || g === undefined || b === undefined ? undefined : { ...diff, gateway: g, bare: b };
  };
  /** `via`'s closed-loop figure against the bare proxy's, paired round by round. */
  const vsBare = (sf: ScenarioFigures, series: RoundSeries, via: Via = 'gateway'): Figure | undefined => {
    const g = closed(sf, via);
    const b = closed(sf, 'bare-proxy');
    const value = pairedRatio(g, b, series);
    return value === undefined ? undefined : { value, gateway: g?.[SINGLE[series]], bare: b?.[SINGLE[series]], rounds: roundRatios(g, b, series) };
  };
  /**
   * The gateway's CPU per request against the bare proxy's with both at the same offered load (the
   * open loop at `atRate`), where the closed-loop rows compare each at its own saturation.
   */
  const vsBareAtRate = (sf: ScenarioFigures): Figure | undefined => {
    const g = gw(sf, 'open', atRate)?.cpuUsPerReq;
    const b = find(sf.runs, 'bare-proxy', 'open', atRate)?.cpuUsPerReq;
    const value = ratio(g, b);
    return value === undefined ? undefined : { value, gateway: g, bare: b };
  };
  /** A figure with its per-round ratios, for the rows that compare two gateways. */
  const paired = (a: RunFigures | undefined, b: RunFigures | undefined): Figure | undefined => {
    const value = pairedThroughputRatio(a, b);
    return value === undefined ? undefined : { value, rounds: roundRatios(a, b) };
  };
  /** A PostgreSQL-mode run's latency minus the SQLite-mode gateway's, open loop at `atRate` (pairedDifference). */
  const overSqlite = (sf: ScenarioFigures, via: Via, key: 'p50Ms' | 'p99Ms') => pairedDifference(open(sf, via), gw(sf, 'open', atRate), key);
  const id = (sf: ScenarioFigures) => sf.scenario.id;
  const byId = (id: string) => results.find((sf) => sf.scenario.id === id);
  const pairs = streamPairs.flatMap(([conv, pass]) => {
    const c = byId(conv);
    const p = byId(pass);
    return c && p ? [{ c, p }] : [];
  });
  const ms = (v: number) => `${signed(v)} ms`;
  const percent = (v: number) => `${(v * 100).toFixed(1)}%`;
  const us = (v: number) => `${v.toFixed(0)} µs`;
  const times = (v: number) => `${v.toFixed(2)}x`;
  const perSec = (v: number) => `${v.toFixed(0)} req/s`;
  const mb = (v: number) => `${v.toFixed(1)} MB`;
  // The core targets are for passthrough (client and upstream speak the same format: the bare proxy
  // can serve them too), billing on (as operators run it).
  const passthrough = results.filter((sf) => sf.scenario.client === sf.scenario.upstream);
  const plain = passthrough.filter((sf) => !sf.scenario.stream);
  const streams = passthrough.filter((sf) => sf.scenario.stream);
  const rss = other.peakRssMb;
  const hooks = other.billingHooksUs;
  return [
    check('CPU per request vs bare proxy (non-stream passthrough)', '<= 2.0x', 2, true, worst(plain, (sf) => vsBare(sf, 'roundCpuUsPerReq'), id, true), times, us),
    // A 20-chunk stream is 20 events to both, so the per-request ratio is the per-event ratio.
    check('CPU per request vs bare proxy (20-chunk streams)', '<= 2.0x', 2, true, worst(streams, (sf) => vsBare(sf, 'roundCpuUsPerReq'), id, true), times, us),
    // Billing off tells billing's share of a CPU miss from the core's.
    info('  billing off, non-stream', worst(plain, (sf) => vsBare(sf, 'roundCpuUsPerReq', 'gateway-billing-off'), id, true), times, us),
    info('  billing off, streams', worst(streams, (sf) => vsBare(sf, 'roundCpuUsPerReq', 'gateway-billing-off'), id, true), times, us),
    // What the proxy library and the two JSON bodies cost any gateway built like this one; the rest is the gateway's own.
    info('  floor proxy (its transport, both bodies parsed), non-stream', worst(plain, (sf) => vsBare(sf, 'roundCpuUsPerReq', 'floor-proxy'), id, true), times, us),
    // At saturation the faster bare proxy serves more requests per event-loop turn and finds its
    // peers' sockets busy more often (fewer wake-ups); at one offered load both pay the same way.
    info(`  both at ${atRate} req/s, non-stream`, worst(plain, vsBareAtRate, id, true), times, us),
    info(`  both at ${atRate} req/s, streams`, worst(streams, vsBareAtRate, id, true), times, us),
    check('saturated throughput vs bare proxy (closed loop)', '>= 0.50x', 0.5, false, worst(passthrough, (sf) => vsBare(sf, 'roundReqPerSec'), id, false), times, perSec),
    // A plain request's latency, as the issue's reference harness measured it; a stream's is its first byte.
    check(`added p50 at ${atRate} req/s over bare proxy's (non-stream)`, '<= +0.2 ms', 0.2, true, worst(plain, (sf) => addedOverBare(sf, 'p50Ms'), id, true), ms),
    check(`added p99 at ${atRate} req/s over bare proxy's (non-stream)`, '<= +1.0 ms', 1, true, worst(plain, (sf) => addedOverBare(sf, 'p99Ms'), id, true), ms),
    info('  billing off, added p50', worst(plain, (sf) => addedOverBare(sf, 'p50Ms', 'gateway-billing-off'), id, true), ms),
    // The issue's harness measured the first byte at 200 req/s: at 1,000 streams a second this
    // 2-core machine's load generator and simulator alone take 1.4 cores, and every server queues.
    check(`added stream first byte (p50, ${firstByteRate} req/s) over bare proxy's`, '<= +0.2 ms', 0.2, true,
      worst(streams, (sf) => addedOverBare(sf, 'ttfbP50Ms', 'gateway', firstByteRate), id, true), ms),
    info(`  streams at ${atRate} req/s: added p50 of the whole stream`, worst(streams, (sf) => addedOverBare(sf, 'p50Ms'), id, true), ms),
    check('peak RSS under the closed loop (its connections in flight)', '<= 150 MB', 150, true,
      rss?.gateway === undefined ? undefined : { value: rss.gateway, gateway: rss.gateway, bare: rss.bare, where: 'closed loops' }, mb),
    // An open loop the machine cannot keep up with holds up to 128 requests in flight.
    info('  whole run (open loops included)', rss?.gatewayWholeRun === undefined ? undefined : { value: rss.gatewayWholeRun, where: 'whole run' }, mb),
    // In-process, so the machine's other load does not count; the worse of a busy and an idle event loop.
    check("billing hooks' event-loop work per request", '<= 25 µs', 25, true,
      hooks && (hooks.busy >= hooks.single ? { value: hooks.busy, where: 'in-process, 8 per turn' } : { value: hooks.single, where: 'in-process, 1 per turn' }),
      (v) => `${v.toFixed(1)} µs`),
    // Shown, not judged: issue 18 replaced this noisy ratio with the in-process target above.
    info('  billing on vs off throughput', worst(results, (sf) => paired(gw(sf, 'closed'), closed(sf, 'gateway-billing-off')), id, false), percent),
    // The gateway runs with metrics on and a request line per request (the operator's tools, issue 17);
    // the quiet one, otherwise the same, with both off.
    check('metrics + request log on vs off throughput', '>= 95%', 0.95, false,
      worst(results, (sf) => paired(gw(sf, 'closed'), closed(sf, 'gateway-quiet')), id, false), percent),
    info('  CPU per request, on / off', worst(plain, (sf) => ratio(gw(sf, 'closed')?.cpuUsPerReq, closed(sf, 'gateway-quiet')?.cpuUsPerReq), id, true), times),
    // PostgreSQL mode against SQLite mode (billing on both), where it ran (the passthrough scenarios).
    check(`PostgreSQL 1 node: added p50 at ${atRate} req/s over SQLite (non-stream)`, '<= +0.3 ms', 0.3, true,
      worst(plain, (sf) => overSqlite(sf, 'gateway-pg', 'p50Ms'), id, true), ms),
    info('  its added p99 over SQLite', worst(plain, (sf) => overSqlite(sf, 'gateway-pg', 'p99Ms'), id, true), ms),
    info('  2 nodes: added p50 over SQLite', worst(plain, (sf) => overSqlite(sf, 'gateway-pg-2', 'p50Ms'), id, true), ms),
    check('PostgreSQL 1 node vs SQLite throughput', '>= 80%', 0.8, false,
      worst(results, (sf) => paired(closed(sf, 'gateway-pg'), gw(sf, 'closed')), id, false), percent),
    check('PostgreSQL 2 nodes vs 1 node throughput (2 shared cores)', '>= 100%', 1, false,
      worst(results, (sf) => paired(closed(sf, 'gateway-pg-2'), closed(sf, 'gateway-pg')), id, false), percent),
    // What one more process gains on these cores at all: the bare proxy's own scaling in the same run.
    info('  2 bare proxies vs 1 throughput (the floor, same cores)', worst(results, (sf) => paired(closed(sf, 'bare-proxy-2'), closed(sf, 'bare-proxy')), id, false), percent),
    info('  PostgreSQL CPU per request, 1 node (non-stream)', worst(plain, (sf) => closed(sf, 'gateway-pg')?.cpuUsPerReq, id, true), us),
    // Different scenarios run at different times: their rounds do not pair up.
    check('converted vs passthrough stream throughput', '>= 80%', 0.8, false,
      worst(pairs, ({ c, p }) => ratio(gw(c, 'closed')?.reqPerSec, gw(p, 'closed')?.reqPerSec), ({ c, p }) => `${id(c)} / ${id(p)}`, false), percent),
    check('validation share of per-request CPU', '< 5%', 0.05, true,
      worst(validation, (v) => v.percentOfRequestCpu === undefined ? undefined : v.percentOfRequestCpu / 100, (v) => `${v.route} body`, true), percent),
  ];
}

export function targetsReport(targets: TargetCheck[]): string {
  const verdict = (t: TargetCheck) => (t.pass === undefined ? (t.goal ? 'n/a' : '') : t.pass ? 'PASS' : 'FAIL');
  return table(
    ['target', 'gateway', 'bare proxy', 'measured (worst)', 'goal', 'rounds min–max', 'where', 'verdict'],
    targets.map((t) => [t.name, t.gateway ?? '', t.bare ?? '', t.measured, t.goal, t.spread ?? '', t.worst ?? '-', verdict(t)]),
  );
}

export function validationReport(validation: ValidationShare[]): string {
  return table(
    ['body', 'bytes', 'JSON.parse µs', 'validate µs', 'validate/parse', 'gateway CPU µs/req', 'validate % of CPU'],
    validation.map((v) => [
      v.route,
      String(v.bodyBytes),
      fixed(v.parseUs, 2),
      fixed(v.validateUs, 2),
      fixed(v.validateUs / v.parseUs, 2),
      fixed(v.gatewayCpuUs, 0),
      v.percentOfRequestCpu === undefined ? '-' : `${v.percentOfRequestCpu.toFixed(2)}%`,
    ]),
  );
}
