// The floor under the owner's constraints: what any gateway built like ours costs before its own
// work. A node:http server that reads the request's body and parses it, sends it through the
// gateway's own transport (lib/proxy.ts: http-proxy-3, one long-lived proxy server per provider, the
// keep-alive agent), reads the whole answer, parses it and writes it back with sendJson, as a
// same-format answer leaves the gateway. No routes, formats, auth, billing or log: it forwards the
// path to the upstream as is, with the client's authorization. Against the bare proxy (bare-proxy.ts),
// what http-proxy-3 and the two bodies cost; against the gateway, what the gateway's own work costs.
// `node dist/bench/floor-proxy.js UPSTREAM` prints its URL on the first line.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import { HttpProxyTransport } from '../lib/proxy.js';
import type { Provider } from '../lib/context.js';
import { sendJson } from '../lib/reply.js';

const upstream = new URL(process.argv[2] ?? '');
const provider = { id: 'floor', format: 'chat', base_url: upstream.href, url: upstream } as Provider;
const transport = new HttpProxyTransport(256);

function readAll(stream: Readable): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.once('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    stream.once('error', reject);
  });
}

async function forward(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const text = (await readAll(req)).toString('utf8');
  JSON.parse(text); // as the gateway validates it
  const headers = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    authorization: req.headers.authorization ?? '',
  };
  const up = await transport.send({ provider, path: req.url ?? '/', headers, body: text }, res).response;
  const answer = (await readAll(up.body)).toString('utf8');
  JSON.parse(answer); // as the gateway reads its usage
  sendJson(res, up.status, answer);
}

const server = http.createServer((req, res) => {
  forward(req, res).catch(() => res.destroy());
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
