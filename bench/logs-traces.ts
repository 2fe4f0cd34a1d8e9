// The cost of the request log and of tracing, timed in-process: gateways in this process (SQLite,
// the in-process simulated provider, billing on), each sent the same sequential chat requests in
// interleaved rounds; wall time and the process's CPU time (client, gateway and simulator
// together) per request, median and minimum over the rounds. Traces go to an OTLP receiver here
// that drops them. `--base DIR`: also a checkout built before this change (its dist/), for
// "tracing off costs nothing". Run: node dist/bench/logs-traces.js [--base DIR] [--requests N] [--rounds N]
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { packageRoot } from '../lib/package-root.js';

const args = process.argv.slice(2);
const arg = (name: string) => {
  const i = args.indexOf(`--${name}`);
  return i === -1 ? undefined : args[i + 1];
};
const REQUESTS = Number(arg('requests') ?? 1000);
const ROUNDS = Number(arg('rounds') ?? 9);
const base = arg('base');

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const discard = { write: () => true };

interface Running {
  url: string;
  key: string;
  close(): Promise<void>;
}

/** A gateway built from `root`'s dist/ (this checkout or the base). */
async function start(root: string, extra: Record<string, unknown>): Promise<Running> {
  const dist = join(root, 'dist/lib');
  const { parseConfig } = await import(join(dist, 'config.js'));
  const { openStore } = await import(join(dist, 'store/index.js'));
  const { startGateway } = await import(join(dist, 'gateway.js'));
  const { silentLogger } = await import(join(dist, 'log.js'));
  const dir = mkdtempSync(join(tmpdir(), 'bench-logs-'));
  const config = parseConfig(
    JSON.stringify({
      server: { host: '127.0.0.1', port: 0 },
      storage: { sqlite: join(dir, 'g.db') },
      demo: { enabled: false },
      rate_limits: { requests_per_minute: 1e9, tokens_per_minute: 1e12 },
      providers: [{ id: 'sim', format: 'chat', simulated: true }],
      models: [{ id: 'm', context_window: 100000, max_output_tokens: 1000 }],
      offers: [{ listing: 'm@sim', model: 'm', provider: 'sim', upstream_model: 'up', price: { input: 1, output: 2 } }],
      ...extra,
    }),
    join(dir, 'g.json'),
  );
  const store = openStore(config, { backgroundWriter: true, log: silentLogger });
  const account = await store.accounts.create({ email: 'bench@example.com' });
  await store.ledger.grant(account.id, 1e15, 'bench');
  const { secret } = await store.keys.create({ accountId: account.id, name: 'bench' });
  // Request lines are built and written, to a stream that drops them (the write itself: see README).
  const gw = await startGateway(config, { store, log: silentLogger, requestLog: discard });
  return {
    url: gw.url,
    key: secret,
    async close() {
      await gw.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const body = JSON.stringify({ model: 'm', max_tokens: 20, messages: [{ role: 'user', content: 'hello there' }] });
function one(g: Running): Promise<void> {
  return new Promise((done, fail) => {
    const req = http.request(`${g.url}/v1/chat/completions`, { method: 'POST', agent, headers: { authorization: `Bearer ${g.key}`, 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? done() : fail(new Error(`status ${res.statusCode}`))));
    });
    req.on('error', fail);
    req.end(body);
  });
}

async function main(): Promise<void> {
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('{}'));
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const otlp = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const root = packageRoot();
  const variants: [string, () => Promise<Running>][] = [
    ...(base ? [['before the change (--base)', () => start(resolve(base), {})] as [string, () => Promise<Running>]] : []),
    ['request log off, tracing off', () => start(root, { log: { requests: false } })],
    ['request log on, tracing off', () => start(root, { log: { requests: true, format: 'json' } })],
    ['request log off, tracing on', () => start(root, { log: { requests: false }, tracing: { otlp_endpoint: otlp } })],
  ];
  const running = await Promise.all(variants.map(([, make]) => make()));
  const wall = variants.map(() => [] as number[]);
  const cpu = variants.map(() => [] as number[]);
  for (const g of running) for (let i = 0; i < 300; i++) await one(g); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    for (let v = 0; v < running.length; v++) {
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      for (let i = 0; i < REQUESTS; i++) await one(running[v]);
      const c = process.cpuUsage(c0);
      wall[v].push(((performance.now() - t0) / REQUESTS) * 1000);
      cpu[v].push((c.user + c.system) / REQUESTS);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`${REQUESTS} sequential requests × ${ROUNDS} rounds per variant, µs per request (median / min over rounds)`);
  variants.forEach(([name], v) =>
    console.log(`${name.padEnd(30)} wall ${median(wall[v]).toFixed(0)} / ${Math.min(...wall[v]).toFixed(0)}   CPU ${median(cpu[v]).toFixed(0)} / ${Math.min(...cpu[v]).toFixed(0)}`),
  );
  for (const g of running) await g.close();
  agent.destroy();
  receiver.close();
}

await main();
