// What hostile clients cost a real gateway process (`npm run build && node dist/bench/abuse.js`):
// - the peak RSS while many sockets upload large bodies without a key, and with a valid key (the
//   bodies then count against server.max_buffered_bytes);
// - the history rows and bytes written by 10 s of invalid requests from one key;
// - a probe request's latency while four clients send the worst bodies the limits allow;
// - closed-loop throughput with the rate limiter in the chain and without it.
import net from 'node:net';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { peakRssMb, resetPeakRss, type Child } from './procs.js';
import { createBenchKey, gatewayConfig, startGatewayProcess, startSimulatorProcess, writeConfig } from './setup.js';
import { closedLoop, keepAliveAgent, openLoop, quantile, type Target } from './load.js';
import { requestTarget, scenarios } from './scenarios.js';
import { worstBodies } from './worst-body.js';
import { MODEL_BY_UPSTREAM } from './scenarios.js';

const SOCKETS = Number(process.env.SOCKETS ?? 250);
const BODY_BYTES = 10 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 'a');

/** One upload: headers, then as much of the body as the gateway takes; resolves when the socket closes or all was sent. */
function upload(url: string, auth: string): Promise<{ status: number | null; sent: number }> {
  const { port } = new URL(url);
  return new Promise((resolve) => {
    const sock = net.connect(Number(port), '127.0.0.1');
    let sent = 0;
    let answer = '';
    const done = () => resolve({ status: answer ? Number(answer.slice(9, 12)) : null, sent });
    sock.on('data', (c) => (answer += c.toString('latin1')));
    sock.on('error', () => {});
    sock.on('close', done);
    sock.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n${auth}content-length: ${BODY_BYTES}\r\n\r\n`);
    const pump = () => {
      while (sent < BODY_BYTES && !sock.destroyed) {
        sent += CHUNK.length;
        if (!sock.write(CHUNK)) return void sock.once('drain', pump);
      }
      if (sent >= BODY_BYTES) setTimeout(() => sock.destroy(), 2000);
    };
    pump();
  });
}

async function round(url: string, pid: number, name: string, auth: string): Promise<void> {
  resetPeakRss(pid);
  const before = peakRssMb(pid);
  const t0 = performance.now();
  const results = await Promise.all(Array.from({ length: SOCKETS }, () => upload(url, auth)));
  const statuses = new Map<string, number>();
  for (const r of results) statuses.set(String(r.status), (statuses.get(String(r.status)) ?? 0) + 1);
  const sentMb = results.reduce((s, r) => s + r.sent, 0) / 1024 / 1024;
  console.log(
    `${name}: ${SOCKETS} sockets × ${BODY_BYTES / 1024 / 1024} MiB declared; statuses ${JSON.stringify(Object.fromEntries(statuses))}; ` +
      `client wrote ${sentMb.toFixed(0)} MiB in ${((performance.now() - t0) / 1000).toFixed(1)} s; gateway peak RSS ${before.toFixed(0)} → ${peakRssMb(pid).toFixed(0)} MB`,
  );
}

/** Bytes of the database and its WAL. */
function storeBytes(db: string): number {
  let n = 0;
  for (const f of [db, `${db}-wal`]) {
    try {
      n += statSync(f).size;
    } catch {
      // not there
    }
  }
  return n;
}

function historyRows(db: string): { rows: number; notRecorded: number } {
  const conn = new Database(db, { readonly: true });
  try {
    const r = conn.prepare('SELECT count(*) AS rows, coalesce(sum(not_recorded), 0) AS notRecorded FROM request_history').get() as { rows: number; notRecorded: number };
    return r;
  } finally {
    conn.close();
  }
}

/** 10 s of requests with a body that is not JSON, from one key, as fast as 32 connections go. */
async function invalidRequests(gw: Child, db: string, secret: string): Promise<void> {
  const body = Buffer.from('{"model": "bench/chat-native", "messages": [');
  const target: Target = {
    port: Number(new URL(gw.url).port),
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', 'content-length': body.length, authorization: `Bearer ${secret}` },
    body,
  };
  const before = { bytes: storeBytes(db), ...historyRows(db) };
  const r = await closedLoop(target, keepAliveAgent(32), 32, 10_000);
  await new Promise((resolve) => setTimeout(resolve, 500)); // a few commit intervals: the last batches land
  const after = { bytes: storeBytes(db), ...historyRows(db) };
  console.log(
    `invalid requests from one key: ${r.errors} answered (${(r.errors / (r.elapsedNs / 1e9)).toFixed(0)}/s) in 10 s; ` +
      `history rows +${after.rows - before.rows}, refusals counted in summaries +${after.notRecorded - before.notRecorded}, ` +
      `database + WAL +${((after.bytes - before.bytes) / 1024).toFixed(0)} KB`,
  );
}

const ms = (ns: number) => (ns / 1e6).toFixed(1);

/** A probe (a small chat request, 20 a second) alone, then while four clients send the worst bodies. */
async function probeUnderWorstBodies(gw: Child, secret: string): Promise<void> {
  const port = Number(new URL(gw.url).port);
  const probe = requestTarget(scenarios[0], port, secret);
  const baseline = await openLoop(probe, keepAliveAgent(64), 20, 5000, 64);
  const model = `"model":"${MODEL_BY_UPSTREAM.messages}"`;
  let stop = false;
  const sent = new Map<string, number>();
  const attacker = async (i: number) => {
    const agent = keepAliveAgent(1);
    while (!stop) {
      const w = worstBodies[i % worstBodies.length];
      const body = Buffer.from(w.build(Math.floor(Math.random() * 1e6)).toString('latin1').replace('"model":"m"', model), 'latin1');
      const target: Target = {
        port,
        path: '/v1/messages',
        headers: { 'content-type': 'application/json', 'content-length': body.length, authorization: `Bearer ${secret}`, 'anthropic-version': '2023-06-01' },
        body,
      };
      await closedLoop(target, agent, 1, 1);
      sent.set(w.name, (sent.get(w.name) ?? 0) + 1);
    }
  };
  const attackers = [0, 1, 2, 3].map(attacker);
  const loaded = await openLoop(probe, keepAliveAgent(64), 20, 15_000, 64);
  stop = true;
  await Promise.all(attackers);
  const fig = (r: typeof baseline) => `p50 ${ms(quantile(r.latencyNs, 0.5))} ms, p99 ${ms(quantile(r.latencyNs, 0.99))} ms (${r.ok} ok, ${r.errors} errors)`;
  console.log(`probe alone: ${fig(baseline)}`);
  console.log(`probe while 4 clients send the worst bodies the limits allow: ${fig(loaded)}; bodies sent: ${JSON.stringify(Object.fromEntries(sent))}`);
}

/** Closed-loop throughput of two gateways, rate limiter in the chain and not, rounds interleaved. */
async function limiterCost(on: Child, onSecret: string, off: Child, offSecret: string): Promise<void> {
  const rounds = 4;
  const rates: Record<string, number[]> = { on: [], off: [] };
  for (let i = 0; i < rounds; i++) {
    const order: [string, Child, string][] = i % 2 ? [['off', off, offSecret], ['on', on, onSecret]] : [['on', on, onSecret], ['off', off, offSecret]];
    for (const [name, gw, secret] of order) {
      const target = requestTarget(scenarios[0], Number(new URL(gw.url).port), secret);
      await closedLoop(target, keepAliveAgent(32), 32, 500);
      const r = await closedLoop(target, keepAliveAgent(32), 32, 3000);
      rates[name].push(r.ok / (r.elapsedNs / 1e9));
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const ratios = rates.on.map((r, i) => r / rates.off[i]);
  console.log(
    `rate limiter: ${median(rates.on).toFixed(0)} req/s with it, ${median(rates.off).toFixed(0)} without (medians of ${rounds} rounds); ` +
      `on/off per round ${ratios.map((r) => r.toFixed(3)).join(', ')}; median ${median(ratios).toFixed(3)}`,
  );
}

const NO_LIMITER = ['auth', 'schema-check', 'offer-pick', 'budget-hold', 'format-transform', 'metering'];

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-abuse-'));
  const sim = await startSimulatorProcess();
  const db = join(dir, 'gateway.db');
  const config = writeConfig(dir, 'gateway', gatewayConfig(sim.url, db));
  const secret = await createBenchKey(config);
  const gw = await startGatewayProcess('gateway', config);
  const children: Child[] = [sim, gw];
  try {
    const only = process.argv[2];
    if (!only || only === 'uploads') {
      await round(gw.url, gw.pid, 'no key', '');
      await round(gw.url, gw.pid, 'valid key', `authorization: Bearer ${secret}\r\n`);
    }
    if (!only || only === 'invalid') await invalidRequests(gw, db, secret);
    if (!only || only === 'worst') await probeUnderWorstBodies(gw, secret);
    if (!only || only === 'limiter') {
      // A second serving process needs a database of its own (one writer per database).
      const offDb = join(dir, 'off.db');
      const offConfig = writeConfig(dir, 'off', { ...gatewayConfig(sim.url, offDb), plugins: NO_LIMITER });
      const offSecret = await createBenchKey(offConfig);
      const off = await startGatewayProcess('gateway-no-limiter', offConfig);
      children.push(off);
      await limiterCost(gw, secret, off, offSecret);
    }
  } finally {
    for (const c of children.reverse()) await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
