// GET /healthz (the process is up) and GET /readyz (send traffic here), for load balancers and
// orchestrators. Served before the dashboard and outside the chain: no key, no rate limit, and
// nothing but memory reads, so a probe costs next to nothing and never waits on the database.
import type { ServerResponse } from 'node:http';
import type { PageHandler } from './server.js';
import type { Store } from './store/types.js';

export interface ReadinessDeps {
  /** Shutdown began (SIGTERM): the load balancer should move traffic away while requests drain. */
  shuttingDown(): boolean;
  store: Store;
}

/**
 * Why this process should not get new requests now, or null. The config is loaded by the time the
 * server listens (a failed reload keeps the running one), so the store and shutdown remain.
 */
export function notReady(deps: ReadinessDeps): string | null {
  if (deps.shuttingDown()) return 'shutting down';
  return deps.store.writes?.problem() ?? null;
}

const HEALTHY = Buffer.from('{"status":"ok"}');
const READY = Buffer.from('{"status":"ready"}');

function send(res: ServerResponse, status: number, body: Buffer, head: boolean): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': body.length, 'cache-control': 'no-store' });
  res.end(head ? undefined : body);
}

export function healthPages(deps: ReadinessDeps): PageHandler {
  return (req, res, path) => {
    if (path === '/healthz') {
      send(res, 200, HEALTHY, req.method === 'HEAD');
      return true;
    }
    if (path !== '/readyz') return false;
    const reason = notReady(deps);
    if (reason === null) send(res, 200, READY, req.method === 'HEAD');
    else send(res, 503, Buffer.from(JSON.stringify({ status: 'not_ready', reason })), req.method === 'HEAD');
    return true;
  };
}
