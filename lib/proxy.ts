// Upstream transports. HTTP/1.1 goes through http-proxy-3 with a keep-alive agent per provider;
// providers with `http2: true` go through http2-wrapper. Both expose the same small interface:
// send a prepared request, get a promise of the response head, abort at any time.
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import httpProxy from 'http-proxy-3';
import http2wrapper from 'http2-wrapper';
import type { Provider } from './context.js';

export interface OutgoingRequest {
  provider: Provider;
  /** Path below the provider's base URL. */
  path: string;
  headers: Record<string, string>;
  /** JSON: text, or its bytes when large (upstream-payload.ts, payloadOf); given to `end()`. */
  body: string | Buffer;
}

export interface UpstreamResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Readable;
  /** The head as received (name, value, …), where the transport has it: see headerOf. */
  rawHeaders?: string[];
}

/** One header of an answer, read from its raw head when there is one (without building all of `headers`). */
export function headerOf(r: UpstreamResponse, name: string): string | undefined {
  if (r.rawHeaders) return rawHeader(r.rawHeaders, name);
  const v = r.headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** The first value of header `name` (lower case) in a raw head (name, value, …). */
function rawHeader(raw: string[], name: string): string | undefined {
  for (let i = 0; i < raw.length; i += 2) if (raw[i].length === name.length && raw[i].toLowerCase() === name) return raw[i + 1];
  return undefined;
}

export interface UpstreamCall {
  /** Resolves at the response head; rejects if the request fails or is aborted before it. */
  readonly response: Promise<UpstreamResponse>;
  /** Abort the request (and its response body, if it already arrived). Idempotent. */
  abort(reason: Error): void;
}

export interface Transport {
  send(out: OutgoingRequest, clientRes: ServerResponse): UpstreamCall;
  close(): void;
}

/** Settles once; later settle attempts are ignored. */
function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {}); // a rejection nobody awaited is not a crash
  return { promise, resolve, reject };
}

/**
 * What http-proxy-3 sees as "the incoming request" of one attempt: our upstream method, path and
 * allowlisted headers, never the client's own headers. One per attempt, so proxy events map back.
 */
class AttemptRequest extends EventEmitter {
  readonly method = 'POST';
  readonly httpVersion = '1.1';
  readonly httpVersionMajor = 1;
  readonly httpVersionMinor = 1;
  proxyReq?: ClientRequest;
  proxyRes?: IncomingMessage;
  aborted?: Error;
  readonly done = deferred<UpstreamResponse>();
  constructor(
    readonly url: string,
    readonly headers: Record<string, string>,
    readonly socket: net.Socket,
    private readonly body: string | Buffer,
  ) {
    super();
  }

  /**
   * http-proxy-3 sends the incoming request's body with `req.pipe(proxyReq)`: the prepared bytes
   * go in one `end()`, without a Readable and its pipe machinery (or a per-request `buffer` option).
   */
  pipe<T extends NodeJS.WritableStream>(dest: T): T {
    dest.end(this.body);
    return dest;
  }

  abort(reason: Error): void {
    if (this.aborted) return;
    this.aborted = reason;
    this.done.reject(reason);
    this.proxyReq?.destroy(reason);
    this.proxyRes?.destroy(reason);
  }
}

/** The provider's base path joined with the route's path ("/v1" + "/chat/completions"), then its query. */
const fullPath = (p: Provider, path: string) => p.url.pathname.replace(/\/$/, '') + path + p.url.search;

const onProxyReq = (proxyReq: ClientRequest, req: unknown) => {
  const a = req as AttemptRequest;
  a.proxyReq = proxyReq;
  if (a.aborted) proxyReq.destroy(a.aborted);
};
/**
 * The response head, its headers read only if asked for: Node builds an IncomingMessage's header
 * object on first access (a keyed store per header, 20 to 30 from a vendor), and an answer that
 * succeeds never looks at them (nor, see withRawKeepAliveHint, does Node's agent).
 */
class ProxiedResponse implements UpstreamResponse {
  constructor(readonly body: IncomingMessage) {}
  get status(): number {
    return this.body.statusCode ?? 502;
  }
  get headers(): IncomingHttpHeaders {
    return this.body.headers;
  }
  get rawHeaders(): string[] {
    return this.body.rawHeaders;
  }
}

const onProxyRes = (proxyRes: IncomingMessage, req: unknown) => {
  const a = req as AttemptRequest;
  a.proxyRes = proxyRes;
  if (a.aborted) proxyRes.destroy(a.aborted);
  else a.done.resolve(new ProxiedResponse(proxyRes));
};
/** A network error before or after the head; also the client gone mid-request (the upstream reset). */
const onProxyError = (err: unknown, req: unknown) => (req as AttemptRequest).abort(err as Error);

/**
 * A provider's long-lived proxy server: its target and keep-alive agent in the server's own options,
 * so an attempt passes none (http-proxy-3 merges per-request options into a copy). toProxy with
 * prependPath off: the attempt's url is already the full upstream path, so http-proxy-3 joins it as
 * is instead of parsing two URLs per request.
 */
function providerProxy(target: URL, agent: http.Agent) {
  const proxy = httpProxy.createProxyServer({ target, agent, selfHandleResponse: true, xfwd: false, prependPath: false, toProxy: true });
  proxy.on('proxyReq', onProxyReq);
  proxy.on('proxyRes', onProxyRes);
  proxy.on('econnreset', onProxyError);
  proxy.on('error', onProxyError);
  return proxy;
}
type ProxyServer = ReturnType<typeof providerProxy>;

type AddRequest = (req: ClientRequest, options: Record<string, unknown>) => void;

/**
 * `agent`, handing Node only the options that are set. http-proxy-3 gives http.request every TLS
 * field of its target, undefined for a URL (setupOutgoing copies ten of them), and Agent.addRequest
 * copies the request's options, a null-prototype object, and its own into another one: V8's slow
 * path, about 2,500 instructions a property. Node reads every option by value, so an option left
 * out is the same to it as one undefined. Callgrind, the main thread, per request: addRequest
 * 73,000 -> 22,000 instructions, the whole ClientRequest 104,000 -> 64,000.
 */
function withSetOptionsOnly<A extends http.Agent>(agent: A): A {
  const addRequest = (agent as unknown as { addRequest: AddRequest }).addRequest;
  (agent as unknown as { addRequest: AddRequest }).addRequest = (req, options) => {
    const set: Record<string, unknown> = {};
    for (const name in options) if (options[name] !== undefined) set[name] = options[name];
    addRequest.call(agent, req, set);
  };
  // addRequest spreads the agent's own options too: as a plain object, on V8's fast path.
  const own = agent as unknown as { options: Record<string, unknown> };
  own.options = { ...own.options };
  return agent;
}

/**
 * `agent`, handing Node's keepSocketAlive the upstream's Keep-Alive hint from the raw head. When an
 * answer ends, Agent.keepSocketAlive reads `res.headers['keep-alive']`, and that one read builds the
 * whole header object (for a vendor's 27 headers, 3 to 4 µs a request in the profile: 1.7% of the
 * main thread), for a header vendors rarely send. For that call `headers` is a one-header object,
 * unset right after: a later read builds the whole object from the raw head as before.
 */
function withRawKeepAliveHint<A extends http.Agent>(agent: A): A {
  type KeepSocketAlive = (socket: net.Socket) => boolean;
  const own = agent as unknown as { keepSocketAlive: KeepSocketAlive };
  const keepSocketAlive = own.keepSocketAlive;
  own.keepSocketAlive = function (this: A, socket) {
    const res = (socket as { _httpMessage?: { res?: IncomingMessage } })._httpMessage?.res;
    if (!res) return keepSocketAlive.call(this, socket);
    const hint = rawHeader(res.rawHeaders, 'keep-alive');
    res.headers = hint === undefined ? {} : { 'keep-alive': hint };
    try {
      return keepSocketAlive.call(this, socket);
    } finally {
      (res as { headers: IncomingHttpHeaders | null }).headers = null; // Node's getter builds it again when read
    }
  };
  return agent;
}

export class HttpProxyTransport implements Transport {
  private readonly proxies = new Map<string, { proxy: ProxyServer; agent: http.Agent }>();

  constructor(private readonly maxSockets: number) {}

  /** By provider and address: a reload that moves a provider gets a server for the new one. */
  private proxyFor(p: Provider): ProxyServer {
    const key = `${p.id} ${p.url.href}`;
    const known = this.proxies.get(key);
    if (known) return known.proxy;
    const opts = { keepAlive: true, maxSockets: this.maxSockets, scheduling: 'lifo' as const };
    const agent = withRawKeepAliveHint(withSetOptionsOnly(p.url.protocol === 'https:' ? new https.Agent(opts) : new http.Agent(opts)));
    const proxy = providerProxy(p.url, agent);
    this.proxies.set(key, { proxy, agent });
    return proxy;
  }

  send(out: OutgoingRequest, clientRes: ServerResponse): UpstreamCall {
    const a = new AttemptRequest(fullPath(out.provider, out.path), out.headers, clientRes.socket as net.Socket, out.body);
    // http-proxy-3 leaves one 'close' listener on the client response per attempt: allow for
    // failover across many offers without Node's leak warning.
    clientRes.setMaxListeners(clientRes.getMaxListeners() + 1);
    this.proxyFor(out.provider).web(a as unknown as IncomingMessage, clientRes, onProxyError);
    return { response: a.done.promise, abort: (reason) => a.abort(reason) };
  }

  close(): void {
    for (const { proxy, agent } of this.proxies.values()) {
      agent.destroy();
      proxy.close();
    }
    this.proxies.clear();
  }
}

type Http2Agent = InstanceType<typeof http2wrapper.Agent>;

/** http2-wrapper's Agent speaks TLS (ALPN h2); for an http:// base URL we speak h2c (prior knowledge). */
function cleartextHttp2Agent(): Http2Agent {
  const agent = new http2wrapper.Agent();
  Object.defineProperty(agent, 'protocol', { value: 'http:' });
  Object.defineProperty(agent, 'createConnection', {
    value: (origin: URL) => net.connect(Number(origin.port) || 80, origin.hostname),
  });
  return agent;
}

export class Http2Transport implements Transport {
  private readonly agents = new Map<string, Http2Agent>();

  private agentFor(p: Provider) {
    let agent = this.agents.get(p.id);
    if (!agent) {
      agent = p.url.protocol === 'https:' ? new http2wrapper.Agent() : cleartextHttp2Agent();
      this.agents.set(p.id, agent);
    }
    return agent;
  }

  send(out: OutgoingRequest): UpstreamCall {
    const done = deferred<UpstreamResponse>();
    const url = new URL(fullPath(out.provider, out.path), out.provider.url);
    let res: IncomingMessage | undefined;
    const req = http2wrapper.request(url, {
      method: 'POST',
      headers: { ...out.headers },
      agent: this.agentFor(out.provider),
    } as http2wrapper.RequestOptions);
    req.on('response', (r: IncomingMessage) => {
      res = r;
      done.resolve({ status: r.statusCode ?? 502, headers: r.headers, body: r });
    });
    req.on('error', (err: Error) => done.reject(err));
    req.end(out.body);
    let aborted = false;
    return {
      response: done.promise,
      abort(reason) {
        if (aborted) return;
        aborted = true;
        done.reject(reason);
        req.destroy(reason);
        res?.destroy(reason);
      },
    };
  }

  close(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}

/** Picks the transport by the provider's `http2` flag. */
export class Transports {
  private readonly h1: HttpProxyTransport;
  private readonly h2 = new Http2Transport();
  constructor(maxSockets: number) {
    this.h1 = new HttpProxyTransport(maxSockets);
  }
  send(out: OutgoingRequest, clientRes: ServerResponse): UpstreamCall {
    return out.provider.http2 ? this.h2.send(out) : this.h1.send(out, clientRes);
  }
  close(): void {
    this.h1.close();
    this.h2.close();
  }
}
