// What hostile clients cost a real gateway process (`npm run build && node dist/bench/abuse.js`):
// the peak RSS while many sockets upload large bodies without a key, and while they upload them with
// a valid key (the bodies then count against server.max_buffered_bytes).
import net from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { peakRssMb, resetPeakRss } from './procs.js';
import { createBenchKey, gatewayConfig, startGatewayProcess, startSimulatorProcess, writeConfig } from './setup.js';

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

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-abuse-'));
  const sim = await startSimulatorProcess();
  const config = writeConfig(dir, 'gateway', gatewayConfig(sim.url, join(dir, 'gateway.db')));
  const secret = await createBenchKey(config);
  const gw = await startGatewayProcess('gateway', config);
  try {
    await round(gw.url, gw.pid, 'no key', '');
    await round(gw.url, gw.pid, 'valid key', `authorization: Bearer ${secret}\r\n`);
  } finally {
    await gw.stop();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
