// The upstream transport's cost, timed in-process: one front server whose handler sends each
// request upstream (a local server answering at once) and relays the end, with a keep-alive client
// sending sequential requests. Variants: our HTTP/1.1 transport (http-proxy-3), a plain
// node:http request on the same kind of agent (the floor: what http-proxy-3's own code adds is the
// difference), and with `--base DIR` the transport of a checkout built before a change. CPU time of
// this process (client, front, transport and upstream together) per request, median and minimum
// over interleaved rounds. Run: node dist/bench/transport.js [--base DIR] [--requests N] [--rounds N]
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { Transports } from '../lib/proxy.js';
import type { Provider } from '../lib/context.js';

const args = process.argv.slice(2);
const arg = (name: string) => {
  const i = args.indexOf(`--${name}`);
  return i === -1 ? undefined : args[i + 1];
};
const REQUESTS = Number(arg('requests') ?? 2000);
const ROUNDS = Number(arg('rounds') ?? 9);
const base = arg('base');

const listen = (s: http.Server) => new Promise<number>((r) => s.listen(0, '127.0.0.1', () => r((s.address() as AddressInfo).port)));

const upstream = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => res.end('{"ok":true}'));
});
const url = new URL(`http://127.0.0.1:${await listen(upstream)}/v1`);
const provider = { id: 'p', url, http2: false } as Provider;
const body = '{"model":"m","messages":[]}';
const headers = { 'content-type': 'application/json', 'content-length': String(body.length) };

type Send = (res: http.ServerResponse) => Promise<NodeJS.ReadableStream>;
const viaTransport = (t: Transports): Send => async (res) => (await t.send({ provider, path: '/chat', headers, body }, res).response).body;
const plainAgent = new http.Agent({ keepAlive: true, maxSockets: 64, scheduling: 'lifo' });
const plain: Send = () =>
  new Promise((done, fail) => {
    const req = http.request({ host: url.hostname, port: url.port, path: '/v1/chat', method: 'POST', headers, agent: plainAgent }, done);
    req.on('error', fail);
    req.end(body);
  });

const variants: [string, Send][] = [];
if (base) {
  const old = (await import(join(resolve(base), 'dist/lib/proxy.js'))) as { Transports: typeof Transports };
  variants.push(['before the change (--base)', viaTransport(new old.Transports(64))]);
}
variants.push(['http-proxy-3 transport', viaTransport(new Transports(64))], ['plain node:http request', plain]);

const front = http.createServer(async (req, res) => {
  const upBody = await variants[Number(req.url!.slice(1))][1](res);
  upBody.resume();
  upBody.on('end', () => res.end('ok'));
});
const frontPort = await listen(front);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const one = (v: number) =>
  new Promise<void>((done) =>
    http.get({ host: '127.0.0.1', port: frontPort, path: `/${v}`, agent }, (res) => {
      res.resume();
      res.on('end', done);
    }),
  );

const cpu = variants.map(() => [] as number[]);
for (let v = 0; v < variants.length; v++) for (let i = 0; i < 500; i++) await one(v); // warm-up
for (let r = 0; r < ROUNDS; r++) {
  for (let v = 0; v < variants.length; v++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < REQUESTS; i++) await one(v);
    const c = process.cpuUsage(c0);
    cpu[v].push((c.user + c.system) / REQUESTS);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`${REQUESTS} sequential requests × ${ROUNDS} rounds per variant, CPU µs per request (median / min over rounds)`);
variants.forEach(([name], v) => console.log(`${name.padEnd(28)} ${median(cpu[v]).toFixed(1)} / ${Math.min(...cpu[v]).toFixed(1)}`));
process.exit(0);
