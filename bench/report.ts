// The bench's figures, their tables, and the comparison with the performance targets.
import type { Scenario } from './scenarios.js';
import { streamPairs } from './scenarios.js';
import type { ValidationFigures } from './validation.js';

/** gateway-pg: billing on, PostgreSQL store, one node; gateway-pg-2: two such nodes, the load spread round-robin. */
export type Via = 'direct' | 'gateway' | 'gateway-billing-off' | 'gateway-quiet' | 'bare-proxy' | 'gateway-pg' | 'gateway-pg-2';

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
  /** Open loop: the run was this many slices, interleaved with the other servers' and pooled. */
  slices?: number;
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

/** Each round's `a` / `b`, when both ran the same interleaved rounds. */
function roundRatios(a: RunFigures | undefined, b: RunFigures | undefined): number[] | undefined {
  const x = a?.roundReqPerSec, y = b?.roundReqPerSec;
  return x && y && x.length === y.length && x.length > 1 ? x.map((v, i) => v / y[i]) : undefined;
}

/**
 * Throughput of `a` against `b`. With interleaved rounds: the median of the round-by-round ratios
 * (the lower middle one of an even count), each from two runs measured back to back, so a machine
 * that is slower for a while slows both sides of a ratio; a ratio of the two medians can pair runs
 * from different rounds. With one round: the plain ratio.
 */
export function pairedThroughputRatio(a: RunFigures | undefined, b: RunFigures | undefined): number | undefined {
  const rounds = roundRatios(a, b);
  if (!rounds) return ratio(a?.reqPerSec, b?.reqPerSec);
  return [...rounds].sort((p, q) => p - q)[Math.floor((rounds.length - 1) / 2)];
}

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

interface Worst {
  where: string;
  value: number;
}

/** The worst figure over the items that have one. */
function worst<T>(items: T[], value: (t: T) => number | undefined, where: (t: T) => string, higherIsWorse: boolean): Worst | undefined {
  let w: Worst | undefined;
  for (const item of items) {
    const v = value(item);
    if (v === undefined || !Number.isFinite(v)) continue;
    if (!w || (higherIsWorse ? v > w.value : v < w.value)) w = { where: where(item), value: v };
  }
  return w;
}

/** A figure shown with the targets for scale, not judged. */
const info = (name: string, w: Worst | undefined, show: (v: number) => string): TargetCheck => ({
  name,
  goal: '',
  measured: w ? show(w.value) : 'not measured',
  worst: w?.where,
  pass: undefined,
});

const check = (name: string, goal: string, limit: number, higherIsWorse: boolean, w: Worst | undefined, show: (v: number) => string): TargetCheck => ({
  name,
  goal,
  measured: w ? show(w.value) : 'not measured',
  worst: w?.where,
  pass: w ? (higherIsWorse ? w.value <= limit : w.value >= limit) : undefined,
});

/** Each target against its worst figure: latency targets at the open-loop rate `atRate`. */
export function checkTargets(results: ScenarioFigures[], validation: ValidationShare[], peakRssMb: number | undefined, atRate: number): TargetCheck[] {
  const gw = (sf: ScenarioFigures, loop: 'closed' | 'open', rate?: number) => find(sf.runs, 'gateway', loop, rate);
  const added = (sf: ScenarioFigures, key: 'p50Ms' | 'p99Ms' | 'ttfbP50Ms', via: Via = 'gateway') => {
    const r = find(sf.runs, via, 'open', atRate);
    const d = r && baselineOf(sf.runs, r);
    return r && d && r[key] !== undefined && d[key] !== undefined ? r[key]! - d[key]! : undefined;
  };
  /** A PostgreSQL-mode run's latency minus the SQLite-mode gateway's, open loop at `atRate`. */
  const overSqlite = (sf: ScenarioFigures, via: Via, key: 'p50Ms' | 'p99Ms') => {
    const r = find(sf.runs, via, 'open', atRate);
    const sqlite = gw(sf, 'open', atRate);
    return r && sqlite ? r[key] - sqlite[key] : undefined;
  };
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
  // The core's targets are for passthrough (client and upstream speak the same format), without
  // billing (the core issue has none; billing's own cost is bounded by the on/off target).
  const passthrough = results.filter((sf) => sf.scenario.client === sf.scenario.upstream);
  const plain = passthrough.filter((sf) => !sf.scenario.stream);
  const streams = passthrough.filter((sf) => sf.scenario.stream);
  const closedVsDirect = (sf: ScenarioFigures, via: Via) => {
    const r = find(sf.runs, via, 'closed');
    return r && ratio(r.reqPerSec, baselineOf(sf.runs, r)?.reqPerSec);
  };
  return [
    check('throughput vs direct (passthrough, billing off)', '>= 0.35x', 0.35, false,
      worst(passthrough, (sf) => closedVsDirect(sf, 'gateway-billing-off'), id, false), times),
    // Per plain request: a 20-chunk stream is 20 events, and costs even the bare proxy about twice as much.
    check('gateway CPU per request (non-stream passthrough, billing off)', '<= 200 µs', 200, true,
      worst(plain, (sf) => find(sf.runs, 'gateway-billing-off', 'closed')?.cpuUsPerReq, id, true), us),
    info('  the same with billing on', worst(plain, (sf) => gw(sf, 'closed')?.cpuUsPerReq, id, true), us),
    info('  bare node:http proxy, for scale', worst(plain, (sf) => find(sf.runs, 'bare-proxy', 'closed')?.cpuUsPerReq, id, true), us),
    info('  20-chunk streams, billing off', worst(streams, (sf) => find(sf.runs, 'gateway-billing-off', 'closed')?.cpuUsPerReq, id, true), us),
    info('  20-chunk streams, bare node:http proxy', worst(streams, (sf) => find(sf.runs, 'bare-proxy', 'closed')?.cpuUsPerReq, id, true), us),
    check(`added p50 at ${atRate} req/s (passthrough, billing on)`, '<= +0.5 ms', 0.5, true, worst(passthrough, (sf) => added(sf, 'p50Ms'), id, true), ms),
    check(`added p99 at ${atRate} req/s (passthrough, billing on)`, '<= +1.5 ms', 1.5, true, worst(passthrough, (sf) => added(sf, 'p99Ms'), id, true), ms),
    info('  billing off, added p50', worst(passthrough, (sf) => added(sf, 'p50Ms', 'gateway-billing-off'), id, true), ms),
    info('  billing off, added p99', worst(passthrough, (sf) => added(sf, 'p99Ms', 'gateway-billing-off'), id, true), ms),
    info('  bare node:http proxy, added p50', worst(passthrough, (sf) => added(sf, 'p50Ms', 'bare-proxy'), id, true), ms),
    info('  bare node:http proxy, added p99', worst(passthrough, (sf) => added(sf, 'p99Ms', 'bare-proxy'), id, true), ms),
    check(`added stream first byte (p50, ${atRate} req/s, passthrough)`, '<= +0.5 ms', 0.5, true,
      worst(passthrough.filter((sf) => sf.scenario.stream), (sf) => added(sf, 'ttfbP50Ms'), id, true), ms),
    info('  billing off', worst(passthrough.filter((sf) => sf.scenario.stream), (sf) => added(sf, 'ttfbP50Ms', 'gateway-billing-off'), id, true), ms),
    info('  throughput vs direct, converted scenarios (billing off)',
      worst(results.filter((sf) => !passthrough.includes(sf)), (sf) => closedVsDirect(sf, 'gateway-billing-off'), id, false), times),
    info('  throughput vs direct, bare node:http proxy', worst(passthrough, (sf) => closedVsDirect(sf, 'bare-proxy'), id, false), times),
    check('gateway peak RSS', '< 100 MB', 100, true, peakRssMb === undefined ? undefined : { where: 'whole run', value: peakRssMb }, (v) => `${v.toFixed(1)} MB`),
    check('billing on vs off throughput', '>= 85%', 0.85, false,
      worst(results, (sf) => pairedThroughputRatio(gw(sf, 'closed'), find(sf.runs, 'gateway-billing-off', 'closed')), id, false), percent),
    // The gateway runs with metrics on and a request line per request (the operator's tools, issue 17);
    // the quiet one, otherwise the same, with both off.
    check('metrics + request log on vs off throughput', '>= 95%', 0.95, false,
      worst(results, (sf) => pairedThroughputRatio(gw(sf, 'closed'), find(sf.runs, 'gateway-quiet', 'closed')), id, false), percent),
    info('  CPU per request, on / off', worst(plain, (sf) => ratio(gw(sf, 'closed')?.cpuUsPerReq, find(sf.runs, 'gateway-quiet', 'closed')?.cpuUsPerReq), id, true), times),
    // PostgreSQL mode against SQLite mode (billing on both), where it ran (the passthrough scenarios).
    check(`PostgreSQL 1 node: added p50 at ${atRate} req/s over SQLite`, '<= +0.3 ms', 0.3, true,
      worst(results, (sf) => overSqlite(sf, 'gateway-pg', 'p50Ms'), id, true), ms),
    info('  its added p99 over SQLite', worst(results, (sf) => overSqlite(sf, 'gateway-pg', 'p99Ms'), id, true), ms),
    info('  2 nodes: added p50 over SQLite', worst(results, (sf) => overSqlite(sf, 'gateway-pg-2', 'p50Ms'), id, true), ms),
    check('PostgreSQL 1 node vs SQLite throughput', '>= 80%', 0.8, false,
      worst(results, (sf) => pairedThroughputRatio(find(sf.runs, 'gateway-pg', 'closed'), gw(sf, 'closed')), id, false), percent),
    check('PostgreSQL 2 nodes vs 1 node throughput (2 shared cores)', '>= 100%', 1, false,
      worst(results, (sf) => pairedThroughputRatio(find(sf.runs, 'gateway-pg-2', 'closed'), find(sf.runs, 'gateway-pg', 'closed')), id, false), percent),
    info('  PostgreSQL CPU per request, 1 node (non-stream)', worst(plain, (sf) => find(sf.runs, 'gateway-pg', 'closed')?.cpuUsPerReq, id, true), us),
    check('converted vs passthrough stream throughput', '>= 80%', 0.8, false,
      worst(pairs, ({ c, p }) => ratio(gw(c, 'closed')?.reqPerSec, gw(p, 'closed')?.reqPerSec), ({ c, p }) => `${id(c)} / ${id(p)}`, false), percent),
    check('validation share of per-request CPU', '< 5%', 0.05, true,
      worst(validation, (v) => v.percentOfRequestCpu === undefined ? undefined : v.percentOfRequestCpu / 100, (v) => `${v.route} body`, true), percent),
  ];
}

export function targetsReport(targets: TargetCheck[]): string {
  const verdict = (t: TargetCheck) => (t.pass === undefined ? (t.goal ? 'n/a' : '') : t.pass ? 'PASS' : 'FAIL');
  return table(
    ['target', 'goal', 'measured (worst)', 'where', 'verdict'],
    targets.map((t) => [t.name, t.goal, t.measured, t.worst ?? '-', verdict(t)]),
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
