// The HTTP front: routes, body limit, slow-client timeouts, request context, graceful shutdown.
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ServerConfig, WireFormat } from './config-types.js';
import { createContext, type Route } from './context.js';
import { GatewayError, badRequest, notFound } from './errors.js';
import { newRequestId } from './request-id.js';
import { listen } from './listen-error.js';
import { sendError, type Chain } from './chain.js';
import { headFor, type HeadList } from './reply.js';
import { BodyBudget, BodyReader } from './body.js';

const API_ROUTES: Record<string, { method: string; route: Route }> = {
  '/v1/chat/completions': { method: 'POST', route: 'chat' },
  '/v1/messages': { method: 'POST', route: 'messages' },
  '/v1/messages/count_tokens': { method: 'POST', route: 'count_tokens' },
  '/v1/models': { method: 'GET', route: 'models' },
};

/**
 * GET /v1/models/{id}: one model, on the models route. Ids contain `/` (`acme/big`): the SDKs send
 * it percent-encoded (`acme%2Fbig`), curl users often do not, so the id is the whole rest of the path.
 */
const MODEL_PATH = '/v1/models/';
const MODEL_ROUTE = API_ROUTES['/v1/models'];

/**
 * Extra pages served outside the chain (OpenAPI document, the dashboard): true when handled. They
 * see GET and HEAD only, unless `allMethods` (forms, webhooks).
 */
export type PageHandler = ((req: IncomingMessage, res: ServerResponse, path: string) => boolean | Promise<boolean>) & {
  allMethods?: boolean;
};

export interface ServerDeps {
  /** The chain for new requests (changes on config reload). */
  chain(): Chain;
  config(): ServerConfig;
  pages: PageHandler[];
  onError(err: unknown, requestId: string): void;
}

/** Messages-format clients announce themselves with a version header. */
const speaksMessages = (req: IncomingMessage) =>
  req.headers['anthropic-version'] !== undefined || req.headers['provider-version'] !== undefined;

function clientFormatFor(route: Route | undefined, req: IncomingMessage, path: string): WireFormat {
  if (route === 'chat') return 'chat';
  if (route === 'messages' || route === 'count_tokens') return 'messages';
  if (route === 'models') return speaksMessages(req) ? 'messages' : 'chat';
  return speaksMessages(req) || path.includes('/messages') ? 'messages' : 'chat';
}

/** After connections are cut, how long their done hooks (charges, history) may still take. */
const DONE_HOOKS_DEADLINE_MS = 5000;

const internalError = () => new GatewayError(500, 'api_error', 'internal_error', 'The gateway hit an internal error.');

export class GatewayServer {
  readonly http: http.Server;
  private inFlight = 0;
  private readonly bodies: BodyBudget;
  private draining = false;
  private drained?: () => void;

  constructor(private readonly deps: ServerDeps) {
    const cfg = deps.config();
    this.bodies = new BodyBudget(() => deps.config().max_buffered_bytes);
    this.http = http.createServer(
      {
        headersTimeout: cfg.headers_timeout_ms,
        requestTimeout: cfg.request_timeout_ms,
        keepAliveTimeout: cfg.keep_alive_timeout_ms,
        // Node checks the two timeouts above on this interval (30 s by default): check often enough
        // that a slow client is cut off near its deadline.
        connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(cfg.headers_timeout_ms / 4))),
        // Lets several SSE responses stream while the socket's writes are paced by the kernel.
        noDelay: true,
      },
      (req, res) => void this.handle(req, res),
    );
    // Malformed requests (bad framing, huge headers, conflicting Content-Length/Transfer-Encoding):
    // answer 400/431 and close, never crash.
    this.http.on('clientError', (err: NodeJS.ErrnoException, socket) => {
      if (!socket.writable) return socket.destroy();
      const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
      const reason = http.STATUS_CODES[status];
      socket.end(`HTTP/1.1 ${status} ${reason}\r\nx-request-id: ${newRequestId()}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    });
  }

  listen(port: number, host: string): Promise<string> {
    return listen(this.http, port, host, 'server').then(() => {
      const a = this.http.address() as AddressInfo;
      const h = a.family === 'IPv6' ? `[${a.address}]` : a.address;
      return `http://${h}:${a.port}`;
    });
  }

  /** Shutdown has begun: readiness fails, connections close after their answer. */
  get shuttingDown(): boolean {
    return this.draining;
  }

  /** Requests in the chain now (metrics). */
  get requestsInFlight(): number {
    return this.inFlight;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const id = newRequestId();
    // The answer's headers so far; API answers write them with their head (reply.ts), pages get them set.
    const head = headFor(id);
    if (this.draining) closeAfterAnswer(head);
    if (hostHeaders(req.rawHeaders) > 1) {
      // Node keeps the first Host, a proxy in front may route by the last: refuse the ambiguity (RFC 9112 3.2).
      closeAfterAnswer(head);
      return sendError(res, { clientFormat: clientFormatFor(undefined, req, ''), head }, badRequest('duplicate_host', 'The request has more than one Host header.'));
    }
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const modelPath = path.length > MODEL_PATH.length && path.startsWith(MODEL_PATH) ? path.slice(MODEL_PATH.length) : undefined;
    const spec = modelPath === undefined ? API_ROUTES[path] : MODEL_ROUTE;
    if (!spec) {
      for (let i = 0; i < head.length; i += 2) res.setHeader(head[i] as string, head[i + 1]);
      const read = req.method === 'GET' || req.method === 'HEAD';
      try {
        for (const page of this.deps.pages) if ((read || page.allMethods) && (await page(req, res, path))) return;
      } catch (e) {
        // A page bug must cost one request, never the process and every stream in it.
        this.deps.onError(e, id);
        if (!res.headersSent) sendError(res, { clientFormat: 'chat' }, internalError());
        else res.destroy();
        return;
      }
      req.resume();
      return sendError(res, { clientFormat: clientFormatFor(undefined, req, path) }, routeNotFound(req.method ?? 'GET', path));
    }
    const clientFormat = clientFormatFor(spec.route, req, path);
    if (req.method !== spec.method) {
      req.resume();
      return sendError(
        res,
        { clientFormat, head: [...head, 'allow', spec.method] },
        new GatewayError(405, 'invalid_request_error', 'method_not_allowed', `${path} accepts ${spec.method} only.`),
      );
    }

    const ctx = createContext({ id, route: spec.route, clientFormat, req, modelPath, head });
    res.once('close', () => {
      if (!res.writableFinished) ctx.client.markGone();
    });
    // The body is read only once the header hooks (the key, its rate) admitted the request; until
    // it is read whole, an answer closes the connection (its unread rest must not be parsed as a request).
    const body = spec.method === 'POST' ? new BodyReader(req, this.deps.config().body_limit_bytes, this.bodies) : undefined;
    if (body) closeAfterAnswer(head);
    const readBody = body && (async () => {
      const raw = await body.read();
      if (!this.draining) keepAliveAfterAnswer(head);
      return raw;
    });
    this.inFlight++;
    try {
      await this.deps.chain().handle(ctx, res, readBody);
    } catch (e) {
      this.deps.onError(e, id);
      if (!res.headersSent) sendError(res, ctx, internalError());
      else res.destroy();
    } finally {
      body?.release();
      if (--this.inFlight === 0 && this.drained) this.drained();
    }
  }

  /**
   * Let in-flight requests finish until the deadline, then cut the rest. The listener stays open
   * while requests drain, so a load balancer's health check reads /readyz's 503 (not a refused
   * connection it may retry) and moves traffic away; what still arrives meanwhile is served, on
   * connections closed after their answer.
   */
  async shutdown(graceMs: number): Promise<void> {
    this.draining = true;
    this.http.closeIdleConnections();
    await this.inFlightDone(graceMs);
    const closed = new Promise<void>((resolve) => this.http.close(() => resolve()));
    this.http.closeAllConnections();
    // Cut requests still run their done hooks (partial charges, history): wait for those too,
    // bounded, so a stuck handler cannot keep the process from exiting.
    await this.inFlightDone(DONE_HOOKS_DEADLINE_MS);
    await closed;
  }

  /** Resolves when no request is in flight, or after `ms`. */
  private inFlightDone(ms: number): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.drained = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

/** Where `name` is among the head's names (even places: a value never matches), or -1. */
function nameAt(head: HeadList, name: string): number {
  for (let i = 0; i < head.length; i += 2) if (head[i] === name) return i;
  return -1;
}

/** The answer closes its connection (said once, however often asked). */
function closeAfterAnswer(head: HeadList): void {
  if (nameAt(head, 'connection') === -1) head.push('connection', 'close');
}

/** Takes back closeAfterAnswer; a head without it is left as it is (splice(-1, 2) would cut its last value). */
function keepAliveAfterAnswer(head: HeadList): void {
  const at = nameAt(head, 'connection');
  if (at !== -1) head.splice(at, 2);
}

function hostHeaders(raw: string[]): number {
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i].length === 4 && raw[i].toLowerCase() === 'host') n++;
  return n;
}

function routeNotFound(method: string, path: string): GatewayError {
  const hint = /^\/v1\/v1\//.test(path)
    ? ' The base address seems to end in /v1 twice: chat-completions clients use {base}/v1, messages clients use {base} alone.'
    : /^\/v1\/(responses|realtime|batches|assistants|threads|files)/.test(path)
      ? ' This gateway serves /v1/chat/completions, /v1/messages, /v1/messages/count_tokens, /v1/models and /v1/models/{id} only.'
      : '';
  return notFound('route_not_found', `No route for ${method} ${path}.${hint}`);
}
