// Metrics, the request log, or both, on against off in whole processes: gateways on the same
// simulator process, the same config but for that (a gateway with metrics on is scraped at the start of
// its turn and every `scrapeMs` meanwhile; Prometheus scrapes every 15 to 60 s), driven in turns by the
// same closed loop so that other load on the machine falls on both alike. Prints requests per second and
// the event loop's CPU per request (the main thread's, from /proc) of each turn, and the medians of their
// on/off ratios. In-process timings miss what a feature costs the process around its own code; this
// measures it whole.
//   npm run build && node dist/bench/onoff.js [metrics|log|both=metrics] [rounds=5] [ms=3000] [concurrency=16] [scenario=chat-chat-json] [scrapeMs=15000]
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closedLoop, keepAliveAgent } from './load.js';
import { createBenchKey, gatewayConfig, startGatewayProcess, startSimulatorProcess, writeConfig } from './setup.js';
import { requestTarget, scenarios } from './scenarios.js';
import { mainThreadCpuMs, type Child } from './procs.js';

const feature = process.argv[2] ?? 'metrics';
if (!['metrics', 'log', 'both'].includes(feature)) throw new Error(`what to turn on and off: metrics, log or both, not ${feature}`);
const [rounds = 5, ms = 3000, concurrency = 16] = process.argv.slice(3, 6).map(Number);
const scenario = scenarios.find((s) => s.id === (process.argv[6] ?? 'chat-chat-json'))!;
const scrapeMs = Number(process.argv[7] ?? 15_000);
const metricsOn = feature !== 'log';
const logOn = feature !== 'metrics';

const dir = mkdtempSync(join(tmpdir(), 'gateway-bench-onoff-'));
const children: Child[] = [];
try {
  const sim = await startSimulatorProcess();
  children.push(sim);
  // Off: the feature off, the other as an operator runs it (metrics off, the request log on).
  const start = async (name: string, on: boolean) => {
    const cfg = gatewayConfig(sim.url, join(dir, `${name}.db`));
    const metricsPort = on && metricsOn ? await freePort() : undefined;
    if (metricsPort) cfg.metrics = { host: '127.0.0.1', port: metricsPort };
    if (!on && logOn) cfg.log = { requests: false };
    const file = writeConfig(dir, name, cfg);
    const key = await createBenchKey(file);
    const child = await startGatewayProcess(name, file);
    children.push(child);
    const metricsUrl = metricsPort ? `http://127.0.0.1:${metricsPort}/metrics` : undefined;
    return { name, on, key, port: Number(new URL(child.url).port), pid: child.pid, metricsUrl };
  };
  // Two of each, started off, on, on, off: of two identical gateways, the one started first has
  // measured up to 6% slower in whole runs (on a 2-core machine shared with the load), so each side
  // has one of each place.
  const gateways = [await start('off-1', false), await start('on-1', true), await start('on-2', true), await start('off-2', false)];
  const agent = keepAliveAgent(concurrency);
  // Warm-up (JIT, connection pools, the SQLite files), not counted.
  for (const gw of gateways) await closedLoop(requestTarget(scenario, gw.port, gw.key), agent, concurrency, ms);
  const ratios: number[] = [];
  const cpuRatios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const sum = { on: { rps: 0, cpuUs: 0 }, off: { rps: 0, cpuUs: 0 } };
    // Every other round in reverse order, so a trend in the machine's load falls on both sides.
    for (const gw of r % 2 === 0 ? gateways : [...gateways].reverse()) {
      if (gw.metricsUrl) void scrape(gw.metricsUrl);
      const scraper = gw.metricsUrl ? setInterval(() => void scrape(gw.metricsUrl!), scrapeMs) : undefined;
      const cpu0 = mainThreadCpuMs(gw.pid);
      const res = await closedLoop(requestTarget(scenario, gw.port, gw.key), agent, concurrency, ms);
      const side = sum[gw.on ? 'on' : 'off'];
      side.cpuUs += ((mainThreadCpuMs(gw.pid) - cpu0) * 1000) / res.ok / 2;
      clearInterval(scraper);
      if (res.errors) throw new Error(`${gw.name}: ${res.errors} errors (${res.firstError})`);
      side.rps += res.ok / (res.elapsedNs / 1e9) / 2;
    }
    ratios.push(sum.on.rps / sum.off.rps);
    cpuRatios.push(sum.on.cpuUs / sum.off.cpuUs);
    process.stdout.write(`round ${r + 1}: off ${sum.off.rps.toFixed(0)} req/s ${sum.off.cpuUs.toFixed(0)} µs CPU/req, ` +
      `on ${sum.on.rps.toFixed(0)} req/s ${sum.on.cpuUs.toFixed(0)} µs CPU/req (the means of two gateways each)\n`);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const scraped = metricsOn ? `, scraped every ${scrapeMs} ms` : '';
  process.stdout.write(`${feature} on/off, ${scenario.id}, concurrency ${concurrency}, ${rounds} rounds of ${ms} ms each${scraped}: median on/off throughput ` +
    `${median(ratios).toFixed(3)}, event-loop CPU per request ${median(cpuRatios).toFixed(3)}\n`);
  agent.destroy();
} finally {
  for (const c of children.reverse()) await c.stop();
  rmSync(dir, { recursive: true, force: true });
}

function scrape(url: string): Promise<void> {
  return new Promise((resolve) => http.get(url, (res) => res.resume().on('end', resolve)).on('error', () => resolve()));
}

/** A port free at the moment (the metrics listener takes it right after). */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = http.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
