// Metrics, the request log, or both, on against off in whole processes: two gateways on the same
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
  const metricsPort = await freePort();
  const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  // Off: the feature off, the other as an operator runs it (metrics off, the request log on).
  const start = async (name: string, on: boolean) => {
    const cfg = gatewayConfig(sim.url, join(dir, `${name}.db`));
    if (on && metricsOn) cfg.metrics = { host: '127.0.0.1', port: metricsPort };
    if (!on && logOn) cfg.log = { requests: false };
    const file = writeConfig(dir, name, cfg);
    const key = await createBenchKey(file);
    const child = await startGatewayProcess(name, file);
    children.push(child);
    return { name, key, port: Number(new URL(child.url).port), pid: child.pid };
  };
  const off = await start('off', false);
  const on = await start('on', true);
  const agent = keepAliveAgent(concurrency);
  // Warm-up (JIT, connection pools, the SQLite files), not counted.
  for (const gw of [off, on]) await closedLoop(requestTarget(scenario, gw.port, gw.key), agent, concurrency, ms);
  const ratios: number[] = [];
  const cpuRatios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const rps: Record<string, number> = {};
    const cpuUs: Record<string, number> = {};
    // Alternate which goes first, so a trend in the machine's load falls on both.
    for (const gw of r % 2 === 0 ? [off, on] : [on, off]) {
      if (gw === on && metricsOn) void scrape(metricsUrl);
      const scraper = gw === on && metricsOn ? setInterval(() => void scrape(metricsUrl), scrapeMs) : undefined;
      const cpu0 = mainThreadCpuMs(gw.pid);
      const res = await closedLoop(requestTarget(scenario, gw.port, gw.key), agent, concurrency, ms);
      cpuUs[gw.name] = ((mainThreadCpuMs(gw.pid) - cpu0) * 1000) / res.ok;
      clearInterval(scraper);
      if (res.errors) throw new Error(`${gw.name}: ${res.errors} errors (${res.firstError})`);
      rps[gw.name] = res.ok / (res.elapsedNs / 1e9);
    }
    ratios.push(rps.on / rps.off);
    cpuRatios.push(cpuUs.on / cpuUs.off);
    process.stdout.write(`round ${r + 1}: off ${rps.off.toFixed(0)} req/s ${cpuUs.off.toFixed(0)} µs CPU/req, ` +
      `on ${rps.on.toFixed(0)} req/s ${cpuUs.on.toFixed(0)} µs CPU/req\n`);
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
