// The bundled simulated upstream: both vendor wire formats on one server, deterministic answers,
// per-request fault injection through `<<sim ...>>` directives. No globals: many may run in one process.
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { createHandler, type ReceivedRequest } from './handler.js';
import { listen } from '../listen-error.js';

export type { ReceivedRequest } from './handler.js';
export { parseDirectives, type Directive } from './directives.js';
export { simulatedInputTokens } from './request-text.js';

export interface SimulatorOptions {
  host?: string;
  port?: number;
  apiKey?: string;
  /** Cleartext HTTP/2 (prior knowledge) instead of HTTP/1.1. */
  http2?: boolean;
  /** Size of the `received` ring (default 1000; 0 records nothing). */
  maxRecorded?: number;
}

export interface Simulator {
  /** `http://host:port`, no trailing slash. */
  url: string;
  port: number;
  /** The latest requests, oldest first. */
  received: ReceivedRequest[];
  clear(): void;
  close(): Promise<void>;
}

export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const received: ReceivedRequest[] = [];
  const maxRecorded = opts.maxRecorded ?? 1000;
  const handler = createHandler({
    apiKey: opts.apiKey,
    record:
      maxRecorded > 0
        ? (r) => {
            received.push(r);
            if (received.length > maxRecorded) received.splice(0, received.length - maxRecorded);
          }
        : undefined,
  });

  let closeConnections: () => void;
  let server: http.Server | http2.Http2Server;
  if (opts.http2) {
    const h2 = http2.createServer(handler);
    const sessions = new Set<http2.ServerHttp2Session>();
    h2.on('session', (s) => {
      sessions.add(s);
      s.on('close', () => sessions.delete(s));
    });
    closeConnections = () => sessions.forEach((s) => s.destroy());
    server = h2;
  } else {
    const h1 = http.createServer(handler);
    closeConnections = () => h1.closeAllConnections();
    server = h1;
  }

  const host = opts.host ?? '127.0.0.1';
  await listen(server, opts.port ?? 0, host);
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    received,
    clear: () => void (received.length = 0),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        closeConnections();
      }),
  };
}

/** The port of `gateway simulate` without --port: fixed, so a config's base_url can name it. */
export const SIMULATE_DEFAULT_PORT = 9090;

/** `gateway simulate` (its flags are declared in lib/cli.ts): prints its url, runs until SIGINT or SIGTERM. */
export async function runSimulatorCli(opts: SimulatorOptions): Promise<Simulator> {
  // Nobody can read a separate process's recordings: keeping them only cost it memory and GC time.
  const sim = await startSimulator({ maxRecorded: 0, ...opts });
  process.stdout.write(`${sim.url}\n`);
  const stop = () => {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    void sim.close();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  return sim;
}
