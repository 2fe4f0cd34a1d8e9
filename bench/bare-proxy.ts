// The reference the figures are scaled by: a bare node:http pass-through proxy (keep-alive
// upstream agent, bodies piped both ways, nothing parsed). `node dist/bench/bare-proxy.js UPSTREAM`
// prints its URL on the first line. It has no routes or formats: it forwards the path as is.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const upstream = new URL(process.argv[2] ?? '');
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const server = http.createServer((req, res) => {
  const out = http.request(
    { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers, agent },
    (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    },
  );
  out.on('error', () => res.destroy());
  req.pipe(out);
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
