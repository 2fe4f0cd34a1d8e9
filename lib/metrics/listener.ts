// The metrics listener: Prometheus text at GET /metrics on an address of its own (metrics.host,
// metrics.port), so nothing about the traffic shows on the public port.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { listen } from '../listen-error.js';
import type { Logger } from '../log.js';
import type { GatewayMetrics } from './gateway-metrics.js';

export interface MetricsListener {
  url: string;
  close(): Promise<void>;
}

export async function startMetricsListener(metrics: GatewayMetrics, host: string, port: number, log: Logger): Promise<MetricsListener> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: metrics are at GET /metrics\n');
      return;
    }
    metrics.scrape().then(
      (text) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err) => {
        log('error', 'metrics scrape failed', { err });
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics scrape failed\n');
      },
    );
  });
  await listen(server, port, host, 'metrics');
  const a = server.address() as AddressInfo;
  return {
    url: `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
