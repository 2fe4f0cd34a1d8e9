// The chain runner and failover loop, with fake plugins and a fake transports object behind a real
// HTTP server and client: hook order, typed errors in the client's format, onDone exactly once
// with the right outcome, failover (statuses, network errors, timeouts, stream errors before
// commit), one error event after commit, 4xx passed through, 503 + Retry-After, breakers.
import t, { type Test } from 'tap';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { Chain } from '../../lib/chain.js';
import { Breakers } from '../../lib/breaker.js';
import { parseConfig } from '../../lib/config.js';
import { resolveOffers } from '../../lib/offers.js';
import { GatewayError, badRequest, errorBody, errorEvent, notFound, toGatewayError, unavailable } from '../../lib/errors.js';
import { newRequestId } from '../../lib/request-id.js';
import { SseParser, type SseEvent } from '../../lib/sse.js';
import { StreamEvent, type Plugin, type StreamHook } from '../../lib/plugin.js';
import type { Logger } from '../../lib/log.js';
import { createContext, type Offer, type Outcome, type RequestContext, type Route } from '../../lib/context.js';
import type { OutgoingRequest, Transports, UpstreamCall, UpstreamResponse } from '../../lib/proxy.js';
import type { UpstreamConfig } from '../../lib/config-types.js';

// ---------------------------------------------------------------- config and offers

/** Providers p1..p3 speak messages, c1..c2 chat; offer "m@X" serves model m through provider X. */
const PROVIDERS = ['p1', 'p2', 'p3', 'c1', 'c2'];
function makeConfig(upstream: Partial<UpstreamConfig>) {
  return parseConfig(
    JSON.stringify({
      upstream: { first_byte_timeout_ms: 2000, idle_timeout_ms: 2000, commit_timeout_ms: 1000, ...upstream },
      providers: PROVIDERS.map((id) => ({
        id,
        format: id.startsWith('c') ? 'chat' : 'messages',
        base_url: `https://${id}.example.com${id.startsWith('c') ? '/v1' : ''}`,
        api_key: `key-${id}`,
      })),
      models: [{ id: 'm', context_window: 100_000, max_output_tokens: 1000 }],
      offers: PROVIDERS.map((id) => ({ listing: `m@${id}`, model: 'm', provider: id, upstream_model: `up-${id}`, price: { input: 1, output: 2 } })),
    }),
    'chain-test.json',
    {},
  );
}

// ---------------------------------------------------------------- fake upstream

interface Sent {
  provider: string;
  path: string;
  headers: Record<string, string>;
  body: any;
  /** Set when the chain aborted this call. */
  aborted?: Error;
}
type Handler = (sent: Sent) => UpstreamResponse | Promise<UpstreamResponse>;

/** A body the test feeds by hand. `send` reports an exception thrown by the consumer's listeners. */
class Body {
  readonly stream = new Readable({ read() {} });
  /** Exceptions that escaped into the upstream body's event emitter (a crash with a real socket). */
  readonly escaped: unknown[] = [];
  constructor() {
    // Like http.IncomingMessage, which emits 'error' on destroy(err) only when someone listens.
    this.stream.on('error', () => {});
  }
  send(text: string): void {
    try {
      this.stream.push(Buffer.from(text));
    } catch (e) {
      this.escaped.push(e);
    }
  }
  end(): void {
    this.stream.push(null);
  }
  reset(): void {
    this.stream.destroy(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
  }
}

const jsonReply = (status: number, value: unknown, contentType = 'application/json'): UpstreamResponse => {
  const b = new Body();
  b.send(typeof value === 'string' ? value : JSON.stringify(value));
  b.end();
  return { status, headers: { 'content-type': contentType }, body: b.stream };
};
const sseReply = (b: Body): UpstreamResponse => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: b.stream });
/** A body that sends these events and ends. */
const sseOf = (events: string[]) => {
  const b = new Body();
  for (const e of events) b.send(e);
  b.end();
  return sseReply(b);
};
const netError = (code: string) => Object.assign(new Error(`connect ${code} 10.0.0.1:443`), { code });

class FakeTransports {
  readonly sent: Sent[] = [];
  private readonly handlers = new Map<string, Handler>();
  private readonly waiters: (() => boolean)[] = [];

  on(provider: string, h: Handler): this {
    this.handlers.set(provider, h);
    return this;
  }

  /** Resolves once `n` upstream calls were made. */
  calls(n: number): Promise<void> {
    if (this.sent.length >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(() => this.sent.length >= n && (resolve(), true)));
  }

  send(out: OutgoingRequest): UpstreamCall {
    const sent: Sent = { provider: out.provider.id, path: out.path, headers: out.headers, body: JSON.parse(out.body.toString()) };
    this.sent.push(sent);
    let body: Readable | undefined;
    let rejectHead!: (e: Error) => void;
    const response = new Promise<UpstreamResponse>((resolve, reject) => {
      rejectHead = reject;
      const h = this.handlers.get(sent.provider);
      Promise.resolve()
        .then(() => (h ? h(sent) : Promise.reject(netError('ECONNREFUSED'))))
        .then((r) => {
          if (sent.aborted) return void r.body.destroy(sent.aborted);
          body = r.body;
          resolve(r);
        }, reject);
    });
    response.catch(() => {});
    for (let i = this.waiters.length - 1; i >= 0; i--) if (this.waiters[i]()) this.waiters.splice(i, 1);
    return {
      response,
      abort(reason) {
        if (sent.aborted) return;
        sent.aborted = reason;
        rejectHead(reason);
        body?.destroy(reason);
      },
    };
  }

  close(): void {}
}

// ---------------------------------------------------------------- SSE fixtures

const ev = (event: string | undefined, data: unknown) => `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
/** A messages-format stream; events [0] and [1] come before output, [2] is the first output. */
const messagesStream = (id: string, text = 'Hi') => [
  ev('message_start', { type: 'message_start', message: { id, type: 'message', role: 'assistant', content: [], usage: { input_tokens: 5, output_tokens: 1 } } }),
  ev('ping', { type: 'ping' }),
  ev('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
  ev('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }),
  ev('content_block_stop', { type: 'content_block_stop', index: 0 }),
  ev('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } }),
  ev('message_stop', { type: 'message_stop' }),
];
/** A chat-format stream; [0] carries no output, [1] is the first output. */
const chatStream = (id: string, text = 'Hi') => [
  ev(undefined, { id, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] }),
  ev(undefined, { id, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: text } }] }),
  ev(undefined, { id, object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
  'data: [DONE]\n\n',
];
const overloadedEvent = ev('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
const messagesBody = (id: string) => ({ id, type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Hi' }], usage: { input_tokens: 5, output_tokens: 1 } });

const parseSse = (text: string): SseEvent[] => {
  const p = new SseParser();
  return [...p.push(text), ...p.end()];
};

// ---------------------------------------------------------------- gateway under test

interface Done {
  plugin: string;
  outcome: Outcome;
  ctx: RequestContext;
}

interface Setup {
  url: string;
  transports: FakeTransports;
  breakers: Breakers;
  offers: Map<string, Offer>;
  /** Every context, in arrival order. */
  contexts: RequestContext[];
  /** Every onDone call. */
  dones: Done[];
  /** Resolves when every chain.handle started so far has returned. */
  settled(): Promise<void>;
  logged: { level: string; msg: string }[];
}

interface SetupOptions {
  plugins?: Plugin[];
  upstream?: Partial<UpstreamConfig>;
  breakers?: Breakers;
}

const CHAT_PATH = '/v1/chat/completions';
const MESSAGES_PATH = '/v1/messages';

/**
 * A node:http server whose handler builds the RequestContext as lib/server.ts does and runs the
 * chain. The first plugin ("pick") parses the body and takes the candidates, in order, from the
 * x-test-offers header (provider ids). A plugin named "done-probe" at the head records onDone.
 */
async function setup(t: Test, opts: SetupOptions = {}): Promise<Setup> {
  const config = makeConfig(opts.upstream ?? {});
  const offers = new Map([...resolveOffers(config).get('m')!].map((o) => [o.provider.id, o]));
  const transports = new FakeTransports();
  const breakers = opts.breakers ?? new Breakers(config.breaker);
  const contexts: RequestContext[] = [];
  const dones: Done[] = [];
  const logged: Setup['logged'] = [];
  const log: Logger = (level, msg) => void logged.push({ level, msg });
  const pick: Plugin = {
    name: 'pick',
    onRequest(ctx) {
      ctx.body = JSON.parse(ctx.rawBody.toString('utf8'));
      ctx.stream = ctx.body.stream === true;
      const ids = String(ctx.req.headers['x-test-offers'] ?? '');
      ctx.candidates = ids ? ids.split(',').map((id) => offers.get(id)!) : [];
    },
    onDone(ctx, outcome) {
      dones.push({ plugin: 'pick', outcome, ctx });
    },
  };
  const chain = new Chain([pick, ...(opts.plugins ?? [])], { config, transports: transports as unknown as Transports, breakers, log });
  const running: Promise<void>[] = [];

  const server = http.createServer((req, res) => {
    running.push(
      (async () => {
        const id = newRequestId();
        res.setHeader('x-request-id', id);
        const path = req.url ?? '/';
        const route: Route = path === CHAT_PATH ? 'chat' : path === MESSAGES_PATH ? 'messages' : 'count_tokens';
        const chunks: Buffer[] = [];
        for await (const c of req) chunks.push(c as Buffer);
        const ctx = createContext({
          id,
          route,
          clientFormat: route === 'chat' ? 'chat' : 'messages',
          req,
          rawBody: Buffer.concat(chunks),
        });
        res.once('close', () => {
          if (!res.writableFinished) ctx.client.markGone();
        });
        contexts.push(ctx);
        await chain.handle(ctx, res);
      })(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    transports,
    breakers,
    offers,
    contexts,
    dones,
    logged,
    settled: async () => {
      let n = -1;
      while (n !== running.length) {
        n = running.length;
        await Promise.all(running);
      }
    },
  };
}

interface ClientResult {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

interface ClientOptions {
  offers: string[];
  stream?: boolean;
  body?: Record<string, unknown>;
  headers?: Record<string, string>;
  /** Sees the text received so far after each chunk (for driving the fake upstream). */
  onText?(text: string, req: http.ClientRequest): void;
  /** Called at the response head, before any body chunk. */
  onResponse?(res: http.IncomingMessage): void;
  /** Gets the client request as soon as it is made. */
  onRequest?(req: http.ClientRequest): void;
}

/** One request with a fresh connection; resolves at the end of the response, or when the request is destroyed. */
function call(url: string, path: string, o: ClientOptions): Promise<ClientResult & { complete: boolean }> {
  const body = JSON.stringify({ model: 'm', max_tokens: 50, messages: [{ role: 'user', content: 'Hello' }], ...(o.stream ? { stream: true } : {}), ...o.body });
  return new Promise((resolve, reject) => {
    let status = 0;
    let headers: http.IncomingHttpHeaders = {};
    let text = '';
    let done = false;
    const finish = (complete: boolean) => {
      if (done) return;
      done = true;
      resolve({ status, headers, text, complete });
    };
    const req = http.request(
      `${url}${path}`,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'x-test-offers': o.offers.join(','), ...o.headers } },
      (res) => {
        status = res.statusCode!;
        headers = res.headers;
        o.onResponse?.(res);
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
          o.onText?.(text, req);
        });
        res.on('end', () => finish(true));
        res.on('close', () => finish(false));
      },
    );
    o.onRequest?.(req);
    req.on('error', (e) => (req.destroyed ? finish(false) : reject(e)));
    req.on('close', () => {
      if (req.destroyed && status === 0) finish(false);
    });
    req.end(body);
  });
}

const json = (r: ClientResult) => JSON.parse(r.text);

/** The recorded hooks of plugins A, B, C. */
function recorders(log: string[], extra: Partial<Record<'A' | 'B' | 'C', Partial<Plugin>>> = {}): Plugin[] {
  return (['A', 'B', 'C'] as const).map((name) => ({
    name,
    onRequest() {
      log.push(`${name}.onRequest`);
    },
    onAttempt(_ctx, up) {
      log.push(`${name}.onAttempt:${up.offer.listing}`);
    },
    onResponseBody(_ctx, body) {
      log.push(`${name}.onResponseBody`);
      body.trail = [...(body.trail ?? []), name];
    },
    onStream() {
      log.push(`${name}.onStream`);
      return undefined;
    },
    onDone(_ctx, outcome) {
      log.push(`${name}.onDone:${outcome}`);
    },
    ...extra[name],
  }));
}

// ================================================================= lib/errors (what the chain renders)

t.test('errors: both body shapes, the chat type of every error type, Retry-After defaults', async (t) => {
  const chatTypes: [ConstructorParameters<typeof GatewayError>[1], string][] = [
    ['invalid_request_error', 'invalid_request_error'],
    ['authentication_error', 'authentication_error'],
    ['permission_error', 'permission_error'],
    ['not_found_error', 'invalid_request_error'],
    ['request_too_large', 'invalid_request_error'],
    ['billing_error', 'insufficient_quota'],
    ['rate_limit_error', 'rate_limit_error'],
    ['api_error', 'server_error'],
    ['overloaded_error', 'service_unavailable'],
    ['timeout_error', 'timeout'],
  ];
  for (const [type, chatType] of chatTypes) {
    const e = new GatewayError(400, type, 'c', 'msg');
    t.same(errorBody(e, 'chat'), { error: { message: 'msg', type: chatType, param: null, code: 'c' } }, type);
    t.same(errorBody(e, 'messages'), { type: 'error', error: { type, message: 'msg' } }, type);
  }
  t.same(errorBody(badRequest('bad', 'Bad.', 'messages[0]'), 'chat'), { error: { message: 'Bad.', type: 'invalid_request_error', param: 'messages[0]', code: 'bad' } });
  t.match(notFound('nf', 'x'), { status: 404, type: 'not_found_error', retryAfter: undefined });
  t.equal(unavailable('u', 'x', 9).retryAfter, 9);
  t.equal(new GatewayError(503, 'overloaded_error', 'u', 'x').retryAfter, 1, 'a 503 always has Retry-After');
  t.equal(new GatewayError(429, 'rate_limit_error', 'r', 'x').retryAfter, undefined);
  const cause = new Error('detail');
  const wrapped = toGatewayError(cause);
  t.match(wrapped, { status: 500, type: 'api_error', code: 'internal_error', cause });
  t.equal(toGatewayError(wrapped), wrapped, 'a GatewayError is kept');
  const e = new GatewayError(502, 'api_error', 'upstream_stream_error', 'broke');
  t.same(parseSse(errorEvent(e, 'messages')), [{ event: 'error', data: JSON.stringify(errorBody(e, 'messages')) }]);
  t.same(parseSse(errorEvent(e, 'chat')), [{ data: JSON.stringify(errorBody(e, 'chat')) }]);
});

// ================================================================= hook order

t.test('request hooks in chain order; response and done hooks in reverse', async (t) => {
  const log: string[] = [];
  const plugins = recorders(log, {
    B: {
      onResponseBody(_ctx, body) {
        log.push('B.onResponseBody');
        return { ...body, trail: [...body.trail, 'B'], replacedBy: 'B' };
      },
    },
  });
  const s = await setup(t, { plugins });
  s.transports.on('p1', () => jsonReply(200, messagesBody('msg_p1')));
  const r = await call(s.url, MESSAGES_PATH, { offers: ['p1'] });
  await s.settled();
  t.equal(r.status, 200);
  t.equal(r.headers['x-service-listing'], 'm@p1');
  t.match(r.headers['content-type'], /application\/json/);
  t.same(json(r), { ...messagesBody('msg_p1'), trail: ['C', 'B', 'A'], replacedBy: 'B' }, 'C saw the upstream body first; B replaced it');
  t.same(log, [
    'A.onRequest',
    'B.onRequest',
    'C.onRequest',
    'A.onAttempt:m@p1',
    'B.onAttempt:m@p1',
    'C.onAttempt:m@p1',
    'C.onResponseBody',
    'B.onResponseBody',
    'A.onResponseBody',
    'C.onDone:ok',
    'B.onDone:ok',
    'A.onDone:ok',
  ]);
  t.same(s.dones.map((d) => d.outcome), ['ok'], 'pick (first in the chain) is done last, once');
  const ctx = s.contexts[0];
  t.equal(ctx.status, 200);
  t.equal(ctx.offer?.listing, 'm@p1');
  t.equal(ctx.error, undefined);
  t.ok(typeof ctx.firstByteAt === 'number' && ctx.firstByteAt >= ctx.startedAt, 'firstByteAt set');
  t.match(ctx.attempts, [{ listing: 'm@p1', outcome: 'ok', status: 200 }]);
  t.equal(ctx.attempts.length, 1);
});

t.test('stream hooks: created in reverse order, events pass C → B → A, onEnd events flow through the later hooks only', async (t) => {
  const log: string[] = [];
  const tagger = (name: string): Partial<Plugin> => ({
    onStream(): StreamHook {
      log.push(`${name}.onStream`);
      return {
        onEvent(e) {
          if (e.json) e.json = { ...e.json, via: [...(e.json.via ?? []), name] };
          return e;
        },
        onEnd() {
          return [StreamEvent.of({ type: 'tail', from: name, via: [] }, 'tail')];
        },
      };
    },
  });
  const s = await setup(t, { plugins: recorders(log, { A: tagger('A'), B: tagger('B'), C: tagger('C') }) });
  s.transports.on('p1', () => sseOf(messagesStream('msg_p1')));
  const r = await call(s.url, MESSAGES_PATH, { offers: ['p1'], stream: true });
  await s.settled();
  t.equal(r.status, 200);
  t.match(r.headers['content-type'], /^text\/event-stream/);
  t.equal(r.headers['x-service-listing'], 'm@p1');
  const events = parseSse(r.text);
  const upstream = messagesStream('msg_p1').flatMap(parseSse);
  t.same(
    events.slice(0, upstream.length),
    upstream.map((u) => ({ event: u.event, data: JSON.stringify({ ...JSON.parse(u.data), via: ['C', 'B', 'A'] }) })),
    'every upstream event, in order, through C then B then A',
  );
  t.same(
    events.slice(upstream.length).map((e) => JSON.parse(e.data)),
    [
      { type: 'tail', from: 'C', via: ['B', 'A'] },
      { type: 'tail', from: 'B', via: ['A'] },
      { type: 'tail', from: 'A', via: [] },
    ],
  );
  t.same(
    log.filter((l) => /onStream|onDone/.test(l)),
    ['C.onStream', 'B.onStream', 'A.onStream', 'C.onDone:ok', 'B.onDone:ok', 'A.onDone:ok'],
  );
  t.same(s.dones.map((d) => d.outcome), ['ok']);
});

t.test('a hook may drop an event or turn it into several', async (t) => {
  const s = await setup(t, {
    plugins: [
      {
        name: 'split',
        onStream: () => ({
          onEvent(e) {
            if (e.event === 'ping') return undefined;
            if (e.event === 'content_block_delta') return [e, StreamEvent.of({ type: 'extra' }, 'extra')];
            return e;
          },
        }),
      },
    ],
  });
  s.transports.on('p1', () => sseOf(messagesStream('msg_p1')));
  const r = await call(s.url, MESSAGES_PATH, { offers: ['p1'], stream: true });
  t.same(
    parseSse(r.text).map((e) => e.event),
    ['message_start', 'content_block_start', 'content_block_delta', 'extra', 'content_block_stop', 'message_delta', 'message_stop'],
  );
});

// ================================================================= typed errors

t.test('a GatewayError in onRequest stops the chain and is rendered once, in the client format', async (t) => {
  for (const [path, expected] of [
    [CHAT_PATH, { error: { message: 'Model m is not allowed.', type: 'permission_error', param: 'model', code: 'model_not_permitted' } }],
    [MESSAGES_PATH, { type: 'error', error: { type: 'permission_error', message: 'Model m is not allowed.' } }],
  ] as const) {
    const log: string[] = [];
    const s = await setup(t, {
      plugins: recorders(log, {
        B: {
          onRequest() {
            log.push('B.onRequest');
            throw new GatewayError(403, 'permission_error', 'model_not_permitted', 'Model m is not allowed.', { param: 'model' });
          },
        },
      }),
    });
    const r = await call(s.url, path, { offers: ['p1'] });
    await s.settled();
    t.equal(r.status, 403, path);
    t.match(r.headers['content-type'], /application\/json/);
    t.same(json(r), expected, `${path}: body shape`);
    t.equal(r.headers['retry-after'], undefined, 'no Retry-After on 403');
    t.same(log, ['A.onRequest', 'B.onRequest', 'C.onDone:error', 'B.onDone:error', 'A.onDone:error'], 'C.onRequest never ran; every onDone did, in reverse');
    t.same(s.dones.map((d) => d.outcome), ['error']);
    t.equal(s.transports.sent.length, 0, 'no upstream call');
    t.equal(s.contexts[0].status, 403);
    t.equal(s.contexts[0].error?.code, 'model_not_permitted');
  }
});

t.test('a 503 GatewayError carries Retry-After; an async rejection works like a throw', async (t) => {
  const s = await setup(t, {
    plugins: [
      {
        name: 'slow-refusal',
        async onRequest() {
          await new Promise((r) => setImmediate(r));
          throw new GatewayError(503, 'overloaded_error', 'busy', 'Busy.', { retryAfter: 7 });
        },
      },
    ],
  });
  const r = await call(s.url, CHAT_PATH, { offers: ['p1'] });
  t.equal(r.status, 503);
  t.equal(r.headers['retry-after'], '7');
  t.same(json(r), { error: { message: 'Busy.', type: 'service_unavailable', param: null, code: 'busy' } });
});

t.test('any other exception becomes an opaque 500 and is logged', async (t) => {
  const s = await setup(t, {
    plugins: [
      {
        name: 'buggy',
        onRequest() {
          throw new TypeError('secret internal detail');
        },
      },
    ],
  });
  const r = await call(s.url, MESSAGES_PATH, { offers: ['p1'] });
  await s.settled();
  t.equal(r.status, 500);
  t.same(json(r), { type: 'error', error: { type: 'api_error', message: 'The gateway hit an internal error.' } });
  t.notMatch(r.text, /secret/, 'the detail is not sent');
  t.match(s.logged, [{ level: 'error' }], 'but logged');
  t.same(s.dones.map((d) => d.outcome), ['error']);
});

t.test('a run of unexpected errors is logged once, not once per request (a database outage fails them all)', async (t) => {
  const s = await setup(t, {
    plugins: [
      {
        name: 'buggy',
        onRequest() {
          throw new TypeError('store unreachable');
        },
      },
    ],
  });
  for (let i = 0; i < 5; i++) t.equal((await call(s.url, MESSAGES_PATH, { offers: ['p1'] })).status, 500);
  await s.settled();
  t.same(s.logged.filter((l) => l.level === 'error').map((l) => l.msg), ['request failed'], 'the first; the others are counted (lib/log-run.ts)');
});

t.test('an onDone that throws is logged and does not stop the other onDone hooks', async (t) => {
  const log: string[] = [];
  const s = await setup(t, {
    plugins: recorders(log, {
      B: {
        onDone() {
          log.push('B.onDone');
          throw new Error('done failed');
        },
      },
    }),
  });
  s.transports.on('p1', () => jsonReply(200, messagesBody('msg_p1')));
  const r = await call(s.url, MESSAGES_PATH, { offers: ['p1'] });
  await s.settled();
  t.equal(r.status, 200);
  t.same(log.filter((l) => l.includes('onDone')), ['C.onDone:ok', 'B.onDone', 'A.onDone:ok']);
  t.same(s.dones.map((d) => d.outcome), ['ok']);
  t.match(s.logged, [{ level: 'error', msg: /onDone/ }]);
});

t.test('a reply set by a plugin is sent without an upstream call', async (t) => {
  const s = await setup(t, {
    plugins: [
      {
        name: 'local',
        onRequest(ctx) {
          ctx.reply = { status: 200, body: { input_tokens: 12 } };
        },
      },
    ],
  });
  const r = await call(s.url, '/v1/messages/count_tokens', { offers: ['p1'] });
  await s.settled();
  t.equal(r.status, 200);
  t.same(json(r), { input_tokens: 12 });
  t.equal(s.transports.sent.length, 0);
  t.same(s.dones.map((d) => d.outcome), ['ok']);
  t.equal(s.contexts[0].status, 200);
});

// ================================================================= the upstream request

t.test('the upstream request: path, upstream model, credentials, allowlisted headers; the client body is not changed', async (t) => {
  const s = await setup(t, {
    plugins: [
      {
        name: 'shape',
        onAttempt(_ctx, up) {
          up.headers['x-extra'] = up.offer.provider.id;
        },
      },
    ],
  });
  s.transports.on('p1', () => jsonReply(503, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }));
  s.transports.on('c1', () => jsonReply(200, { id: 'chatcmpl-1', object: 'chat.completion', choices: [] }));
  const r = await call(s.url, MESSAGES_PATH, {
    offers: ['p1', 'c1'],
    headers: { authorization: 'Bearer client-secret', 'x-api-key': 'client-secret', cookie: 'a=b', 'anthropic-beta': 'tools-2024', 'x-custom': 'no' },
  });
  await s.settled();
  t.equal(r.status, 200);
  const [m, c] = s.transports.sent;
  t.equal(m.path, '/v1/messages');
  t.equal(m.body.model, 'up-p1');
  t.equal(m.headers['x-api-key'], 'key-p1');
  t.equal(m.headers['anthropic-version'], '2023-06-01');
  t.equal(m.headers['anthropic-beta'], undefined, "the client's anthropic-beta is not forwarded by the core (offer-pick decides which betas pass)");
  t.equal(m.headers['x-extra'], 'p1', 'headers set by onAttempt');
  t.equal(m.headers['content-length'], String(Buffer.byteLength(JSON.stringify(m.body))));
  t.equal(c.path, '/chat/completions');
  t.equal(c.body.model, 'up-c1');
  t.equal(c.headers.authorization, 'Bearer key-c1');
  for (const h of [m.headers, c.headers]) {
    t.notMatch(JSON.stringify(h), /client-secret|a=b|x-custom|tools-2024/, 'no client credentials, cookies, betas or other headers');
  }
  t.equal(s.contexts[0].body.model, 'm', 'the client body keeps its model for the next attempt');
});

// ================================================================= failover

t.test('failover on 503, then success on the second offer', async (t) => {
  const log: string[] = [];
  const s = await setup(t, { plugins: recorders(log) });
  s.transports.on('p1', () => jsonReply(503, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }));
  s.transports.on('p2', () => jsonReply(200, messagesBody('msg_p2')));
  const r = await call(s.url, MESSAGES_PATH, { offers: ['p1', 'p2'] });
  await s.settled();
  t.equal(r.status, 200);
  t.equal(r.headers['x-service-listing'], 'm@p2');
  t.equal(json(r).id, 'msg_p2');
  const ctx = s.contexts[0];
  t.match(ctx.attempts, [
    { listing: 'm@p1', outcome: 'failed', status: 503, reason: 'upstream 503' },
    { listing: 'm@p2', outcome: 'ok', status: 200 },
  ]);
  t.equal(ctx.attempts.length, 2);
  t.ok(ctx.attempts.every((a) => typeof a.durationMs === 'number' && a.durationMs >= 0));
  t.equal(ctx.offer?.listing, 'm@p2');
  t.same(
    log.filter((l) => l.includes('onAttempt')),
    ['A.onAttempt:m@p1', 'B.onAttempt:m@p1', 'C.onAttempt:m@p1', 'A.onAttempt:m@p2', 'B.onAttempt:m@p2', 'C.onAttempt:m@p2'],
  );
  t.same(s.dones.map((d) => d.outcome), ['ok']);
});

t.test('what fails over before the first byte', async (t) => {
  const cases: [string, Handler, RegExp][] = [
    ['connect error', () => Promise.reject(netError('ECONNREFUSED')), /ECONNREFUSED/],
    // The upstream's own words (which can echo key fragments) stay in the operator log.
    ['401', () => jsonReply(401, { error: { message: 'bad key sk-proj-****abcd' } }), /^upstream 401 \(provider authentication or permission\)$/],
    ['402', () => jsonReply(402, { error: { message: 'your provider account is out of credit' } }), /^upstream 402 \(provider account out of credit\)$/],
    ['403', () => jsonReply(403, { error: { message: 'forbidden' } }), /upstream 403/],
    ['404', () => jsonReply(404, 'not found', 'text/plain'), /^upstream 404 \(model or route not found at the provider\)$/],
    ['408', () => jsonReply(408, {}), /upstream 408/],
    ['409', () => jsonReply(409, {}), /upstream 409/],
    ['429', () => jsonReply(429, { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } }), /^upstream 429 \(rate limited\)$/],
    ['500', () => jsonReply(500, { error: { message: 'oops' } }), /^upstream 500$/],
    ["the offer's output limit (a 400 about max_tokens)", () => jsonReply(400, { type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: 64000 > 32000, the maximum allowed' } }), /output limit of this offer/],
    ['529', () => jsonReply(529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }), /upstream 529/],
    ['a success body that is not JSON', () => jsonReply(200, '<html>gateway timeout</html>', 'text/html'), /not JSON/],
    ['a JSON success body that is not an object', () => jsonReply(200, '42'), /not a JSON object/],
    // A 200 whose body is an error is a failure, not an (empty) answer to charge for.
    ['a 200 with an error body', () => jsonReply(200, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }), /^upstream 200 with an error body: Overloaded$/],
    [
      'a reset in the middle of the body',
      () => {
        const b = new Body();
        b.send('{"id":"msg_p1",');
        b.stream.once('resume', () => b.reset());
        return { status: 200, headers: { 'content-type': 'application/json' }, body: b.stream };
      },
      /ECONNRESET|closed before the body ended/,
    ],
  ];
  // A breaker that never opens: every case must reach the first offer.
  const s = await setup(t, { breakers: new Breakers({ failure_threshold: 1000, cooldown_ms: 1 }) });
  s.transports.on('p2', () => jsonReply(200, messagesBody('msg_p2')));
  for (const [name, handler, reason] of cases) {
    s.transports.on('p1', handler);
    const before = s.contexts.length;
    const r = await call(s.url, MESSAGES_PATH, { offers: ['p1', 'p2'] });
    await s.settled();
    t.equal(r.status, 200, `${name}: served`);
    t.equal(json(r).id, 'msg_p2', `${name}: by the second offer`);
    t.match(s.contexts[before].attempts, [{ listing: 'm@p1', outcome: 'failed', reason }, { listing: 'm@p2', outcome: 'ok' }], name);
  }
});

t.test('a chat upstream answering 200 with an error body fails over; the next offer serves', async (t) => {
  const s = await setup(t);
  s.transports.on('c1', () => jsonReply(200, { error: { message: 'The server had an error', type: 'server_error' } }));
  s.transports.on('p2', () => jsonReply(200, messagesBody('msg_p2')));
  const r = await call(s.url, MESSAGES_PATH, { offers: ['c1', 'p2'] });
  await s.settled();
  t.equal(r.status, 200);
  t.equal(json(r).id, 'msg_p2');
  t.match(s.contexts[0].attempts, [{ listing: 'm@c1', outcome: 'failed', status: 200, reason: /error body: The server had an error/ }, { listing: 'm@p2', outcome: 'ok' }]);
});

/** An answer Node parsed whole with its head (http.IncomingMessage's `complete`); what subscribes to its events is recorded. */
function wholeReply(status: number, text: string) {
  const b = new Body();
  b.send(text);
  b.end();
  const subscribed: string[] = [];
  const on = b.stream.on;
  b.stream.on = function (this: Readable, event: string | symbol, listener: (...args: any[]) => void) {
    subscribed.push(String(event));
    return on.call(this, event, listener);
  } as typeof b.stream.on;
  const reply: UpstreamResponse = { status, headers: { 'content-type': 'application/json' }, body: Object.assign(b.stream, { complete: true }) };
  return { reply, subscribed };
}

t.test('an answer that came whole with its head is taken from its buffer at once, no event listened for', async (t) => {
  const s = await setup(t);
  const whole = wholeReply(200, JSON.stringify(messagesBody('msg_p1')));
  s.transports.on('p1', () => whole.reply);
  const r = await call(s.url, MESSAGES_PATH, { offers: ['p1'] });
  await s.settled();
  t.equal(r.status, 200);
  t.same(json(r), messagesBody('msg_p1'));
  t.same(whole.subscribed, [], 'no data, end, error or close listener');
});

t.test('an error body that came whole but is over its bound is still cut off as it is read', async (t) => {
  const s = await setup(t);
  const whole = wholeReply(500, JSON.stringify({ error: { message: 'x'.repeat(100 * 1024) } }));
  s.transports.on('p1', () => whole.reply);
  s.transports.on('p2', () => jsonReply(200, messagesBody('msg_p2')));
  const r = await call(s.url, MESSAGES_PATH, { offers: ['p1', 'p2'] });
  await s.settled();
  t.equal(json(r).id, 'msg_p2');
  t.match(s.transports.sent[0].aborted, { reason: 'upstream body too large' });
  t.ok(whole.subscribed.includes('data'), 'read as it comes');
});

t.test('upstream texts are scrubbed of the provider key and secret shapes before the client, history and the log see them', async (t) => {
  const s = await setup(t);
  const echo = 'you sent x-api-key: key-p1, Authorization: Bearer abcdef0123456789abcdef and sk-ant-api03-AAAABBBBCCCC; the key key-p1 is unknown';
  s.transports.on('p1', () => jsonReply(400, { type: 'error', error: { type: 'invalid_request_error', message: echo } }));
  const r = await call(s.url, MESSAGES_PATH, { offers: ['p1'] });
  await s.settled();
  t.equal(r.status, 400);
  t.match(json(r).error.message, /^The upstream provider rejected the request: you sent x-api-key: \[redacted\]/);
  t.match(json(r).error.message, /the key \[redacted\] is unknown$/);
  t.notMatch(r.text, /key-p1|0123456789abcdef|AAAABBBB|sk-ant/, 'no key nor secret-shaped text reaches the client');
  t.notMatch(JSON.stringify(s.contexts[0].error?.message), /key-p1|0123456789abcdef|AAAABBBB/, 'nor what history records');
});

t.test('no response headers within the first-byte timeout: the call is aborted and the next offer tried', async (t) => {
  const s = await setup(t, { upstream: { first_byte_timeout_ms: 100 } });
  s.transports.on('p1', () => new Promise<never>(() => {}));
  s.transports.on('p2', () => jsonReply(200, messagesBody('msg_p2')));
  const r = await call(s.url, MESSAGES_PATH, { offers: ['p1', 'p2'] });
  await s.settled();
  t.equal(r.status, 200);
  t.equal(json(r).id, 'msg_p2');
  t.ok(s.transports.sent[0].aborted, 'the first call was aborted');
  t.match(s.contexts[0].attempts[0], { listing: 'm@p1', outcome: 'failed', reason: 'no response headers within 100 ms' });
});

t.test('past upstream.max_request_ms before the first byte: 504 timeout_error, no other offer tried', async (t) => {
  const s = await setup(t, { upstream: { max_request_ms: 150, first_byte_timeout_ms: 5000 }, breakers: new Breakers({ failure_threshold: 1, cooldown_ms: 60_000 }) });
  s.transports.on('p1', () => new Promise<never>(() => {}));
  s.transports.on('p2', () => jsonReply(200, messagesBody('msg_p2')));
  const r = await call(s.url, MESSAGES_PATH, { offers: ['p1', 'p2'] });
  await s.settled();
  t.equal(r.status, 504);
  t.match(json(r), { type: 'error', error: { type: 'timeout_error', message: /took longer than the gateway's limit of 150 ms/ } });
  t.equal(s.transports.sent.length, 1, 'no failover: the request is out of time');
  t.ok(s.transports.sent[0].aborted, 'the upstream call was aborted');
  t.equal(s.breakers.isOpen('m@p1'), false, 'not counted against the offer');
  t.same(s.dones.map((d) => d.outcome), ['error']);
});

t.test('past upstream.max_request_ms mid-stream: the stream ends with one timeout error event', async (t) => {
  const s = await setup(t, { upstream: { max_request_ms: 300 }, breakers: new Breakers({ failure_threshold: 1, cooldown_ms: 60_000 }) });
  const body = new Body();
  const events = chatStream('c-1');
  s.transports.on('c1', () => {
    body.send(events[0]);
    body.send(events[1]);
    // Then a trickle of output that would go on for ever: the idle timeout never fires.
    const trickle = setInterval(() => body.send(events[1]), 50);
    body.stream.once('close', () => clearInterval(trickle));
    return sseReply(body);
  });
  const r = await call(s.url, CHAT_PATH, { offers: ['c1', 'c2'], stream: true });
  await s.settled();
  t.equal(r.status, 200, 'the stream had started');
  t.ok(r.complete, 'and ended cleanly');
  const got = parseSse(r.text);
  t.ok(got.length >= 3, 'output reached the client before the end');
  t.match(JSON.parse(got.at(-1)!.data), { error: { type: 'timeout', code: 'request_timeout' } }, 'the last event is the timeout error');
  t.equal(got.filter((e) => e.data.includes('"error"')).length, 1, 'exactly one error event');
  t.ok(s.transports.sent[0].aborted, 'the upstream call was aborted');
  t.equal(s.transports.sent.length, 1);
  t.equal(s.breakers.isOpen('m@c1'), false, 'not counted against the offer');
  t.equal(s.contexts[0].error?.code, 'request_timeout');
  t.same(s.dones.map((d) => d.outcome), ['error']);
});

t.test('a 4xx such as 400 goes to the client in its format and is not failed over', async (t) => {
  const cases: [string, number, object][] = [
    [CHAT_PATH, 400, { error: { message: 'The upstream provider rejected the request: messages.0.content: must not be empty', type: 'invalid_request_error', param: null, code: 'upstream_rejected' } }],
    [MESSAGES_PATH, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'The upstream provider rejected the request: messages.0.content: must not be empty' } }],
    [MESSAGES_PATH, 413, { type: 'error', error: { type: 'request_too_large', message: 'The upstream provider rejected the request: messages.0.content: must not be empty' } }],
    [MESSAGES_PATH, 422, { type: 'error', error: { type: 'invalid_request_error', message: 'The upstream provider rejected the request: messages.0.content: must not be empty' } }],
  ];
  for (const [path, status, expected] of cases) {
    for (const stream of [false, true]) {
      const s = await setup(t, { breakers: new Breakers({ failure_threshold: 1, cooldown_ms: 60_000 }) });
      s.transports.on('p1', () => jsonReply(status, { type: 'error', error: { type: 'invalid_request_error', message: 'messages.0.content: must not be empty' } }));
      s.transports.on('p2', () => jsonReply(200, messagesBody('msg_p2')));
      const r = await call(s.url, path, { offers: ['p1', 'p2'], stream });
      await s.settled();
      const name = `${path} ${status}${stream ? ' stream' : ''}`;
      t.equal(r.status, status, name);
      t.match(r.headers['content-type'], /application\/json/, `${name}: a JSON error, not a stream`);
      t.same(json(r), expected, `${name}: body`);
      t.equal(s.transports.sent.length, 1, `${name}: the second offer was not tried`);
      t.match(s.contexts[0].attempts, [{ listing: 'm@p1', outcome: 'failed', status }]);
      t.same(s.dones.map((d) => d.outcome), ['error']);
      t.equal(s.breakers.isOpen('m@p1'), false, `${name}: the upstream answered; not a breaker failure`);
    }
  }
});

t.test('all offers failing → 503 with Retry-After from the breakers', async (t) => {
  const clock = { now: 1_000_000 };
  const breakers = new Breakers({ failure_threshold: 1, cooldown_ms: 7000 }, () => clock.now);
  const s = await setup(t, { breakers });
  s.transports.on('p1', () => jsonReply(503, { error: { message: 'Overloaded' } }));
  s.transports.on('p2', () => Promise.reject(netError('ECONNRESET')));
  const r1 = await call(s.url, CHAT_PATH, { offers: ['p1', 'p2'] });
  await s.settled();
  t.equal(r1.status, 503);
  t.equal(r1.headers['retry-after'], '7', 'both offers cool down for 7 s');
  const body = json(r1);
  t.match(body, { error: { type: 'service_unavailable', code: 'no_offer_available', param: null } });
  t.match(body.error.message, /m@p1: upstream 503; m@p2: ECONNRESET/, 'names every offer and why');
  t.same(s.dones.map((d) => d.outcome), ['error']);

  // Both breakers are open now: nothing is sent, the attempts say "skipped".
  clock.now += 3000;
  const r2 = await call(s.url, CHAT_PATH, { offers: ['p1', 'p2'] });
  await s.settled();
  t.equal(r2.status, 503);
  t.equal(r2.headers['retry-after'], '4', 'the remaining cooldown');
  t.equal(s.transports.sent.length, 2, 'no upstream call while cooling down');
  t.match(s.contexts[1].attempts, [
    { listing: 'm@p1', outcome: 'skipped' },
    { listing: 'm@p2', outcome: 'skipped' },
  ]);
  t.match(json(r2), { error: { code: 'no_offer_available' } });

  // Cooled down: one trial each; a success closes p2's breaker.
  clock.now += 4000;
  s.transports.on('p2', () => jsonReply(200, messagesBody('msg_p2')));
  const r3 = await call(s.url, CHAT_PATH, { offers: ['p1', 'p2'] });
  await s.settled();
  t.equal(r3.status, 200);
  t.equal(breakers.isOpen('m@p2'), false);
  t.equal(breakers.isOpen('m@p1'), true, 'p1 failed its trial: open again');
});

t.test('all offers failing without open breakers → 503 with Retry-After 1 (messages shape)', async (t) => {
  const s = await setup(t);
  s.transports.on('p1', () => jsonReply(500, {}));
  s.transports.on('p2', () => jsonReply(502, {}));
  const r = await call(s.url, MESSAGES_PATH, { offers: ['p1', 'p2'] });
  t.equal(r.status, 503);
  t.equal(r.headers['retry-after'], '1');
  t.match(json(r), { type: 'error', error: { type: 'overloaded_error', message: /No offer for model m/ } });
});

t.test("all offers failing: Retry-After is the soonest any of them may answer, the upstream's own Retry-After included", async (t) => {
  const clock = { now: 1_000_000 };
  const withHeaders = (r: UpstreamResponse, headers: Record<string, string>) => ({ ...r, headers: { ...r.headers, ...headers } });
  const rateLimited = { type: 'error', error: { type: 'rate_limit_error', message: 'Rate limited' } };
  // The breakers open at the first failure, with a cooldown of 30 s: the upstreams' own word wins.
  const breakers = new Breakers({ failure_threshold: 1, cooldown_ms: 30_000 }, () => clock.now);
  const s = await setup(t, { breakers });
  s.transports.on('p1', () => withHeaders(jsonReply(429, rateLimited), { 'retry-after': '7' }));
  s.transports.on('p2', () => withHeaders(jsonReply(529, rateLimited), { 'retry-after': '12' }));
  const r1 = await call(s.url, MESSAGES_PATH, { offers: ['p1', 'p2'] });
  t.equal(r1.status, 503);
  t.equal(r1.headers['retry-after'], '7', "p1's own 7 s, not the breaker's 30 s");
  clock.now += 3000;
  const r2 = await call(s.url, MESSAGES_PATH, { offers: ['p1', 'p2'] });
  t.equal(r2.headers['retry-after'], '4', 'both skipped now: p1 answers again in 4 s');
  t.equal(s.transports.sent.length, 2, 'no upstream call before then');

  // Below the breakers' threshold: the hint alone; retry-after-ms and an HTTP date are read too.
  const s2 = await setup(t);
  s2.transports.on('p1', () => withHeaders(jsonReply(429, rateLimited), { 'retry-after-ms': '2500', 'retry-after': '9' }));
  s2.transports.on('p2', () => withHeaders(jsonReply(503, rateLimited), { 'retry-after': new Date(Date.now() + 60_000).toUTCString() }));
  const r3 = await call(s2.url, CHAT_PATH, { offers: ['p1', 'p2'] });
  t.equal(r3.status, 503);
  t.equal(r3.headers['retry-after'], '3', 'retry-after-ms 2500 → 3 s, the sooner of the two');
  const r4 = await call(s2.url, CHAT_PATH, { offers: ['p2'] });
  const wait = Number(r4.headers['retry-after']);
  t.ok(wait >= 58 && wait <= 60, `an HTTP date a minute ahead: ${wait} s`);
});

t.test('no candidates left → 503 with a finite Retry-After', async (t) => {
  // A later plugin (e.g. budget-hold) may narrow the candidates down to none.
  const s = await setup(t);
  const r = await call(s.url, MESSAGES_PATH, { offers: [] });
  t.equal(r.status, 503);
  t.match(r.headers['retry-after'], /^[1-9]\d*$/, `Retry-After is a positive integer (got ${r.headers['retry-after']})`);
});

// ================================================================= streams: commit and failover

t.test('a stream whose first event is an error event fails over; nothing of it reaches the client', async (t) => {
  const s = await setup(t);
  s.transports.on('p1', () => sseOf([messagesStream('msg_p1')[0], overloadedEvent]));
  s.transports.on('p2', () => sseOf(messagesStream('msg_p2')));
  const r = await call(s.url, MESSAGES_PATH, { offers: ['p1', 'p2'], stream: true });
  await s.settled();
  t.equal(r.status, 200);
  t.equal(r.headers['x-service-listing'], 'm@p2');
  t.notMatch(r.text, /msg_p1|Overloaded/, 'the held-back events of the failed attempt are dropped');
  t.same(parseSse(r.text), messagesStream('msg_p2').flatMap(parseSse), 'exactly the second stream');
  t.match(s.contexts[0].attempts, [
    { listing: 'm@p1', outcome: 'failed', reason: 'upstream error event: Overloaded' },
    { listing: 'm@p2', outcome: 'ok' },
  ]);
  t.ok(s.transports.sent[0].aborted, 'the failed stream was closed');
  t.same(s.dones.map((d) => d.outcome), ['ok']);
});

t.test('before commit, these also fail over', async (t) => {
  const cases: [string, string, string, () => UpstreamResponse, RegExp][] = [
    ['chat error chunk', 'c1', CHAT_PATH, () => sseOf([chatStream('c-1')[0], ev(undefined, { error: { message: 'rate limited', type: 'rate_limit' } })]), /upstream error event: rate limited/],
    ['messages error without event name', 'p1', MESSAGES_PATH, () => sseOf([ev(undefined, { type: 'error', error: { message: 'Overloaded' } })]), /upstream error event: Overloaded/],
    ['malformed event', 'p1', MESSAGES_PATH, () => sseOf([messagesStream('msg_p1')[0], 'event: content_block_start\ndata: {not json\n\n']), /malformed/],
    [
      'reset before any output',
      'p1',
      MESSAGES_PATH,
      () => {
        const b = new Body();
        b.send(messagesStream('msg_p1')[0]);
        b.stream.once('resume', () => b.reset());
        return sseReply(b);
      },
      /ECONNRESET|closed mid-stream/,
    ],
    ['end without any event', 'p1', MESSAGES_PATH, () => sseOf([': just a comment\n\n']), /ended without any event/],
    // An empty text block start is no output yet: an "overloaded" right after it still fails over.
    ['error after an empty block start', 'p1', MESSAGES_PATH, () => sseOf([...messagesStream('msg_p1').slice(0, 3), overloadedEvent]), /upstream error event: Overloaded/],
    // A clean close before message_stop is a cut-off answer, not a complete one.
    ['clean close before the final event', 'p1', MESSAGES_PATH, () => sseOf(messagesStream('msg_p1').slice(0, 2)), /ended before its final event/],
    ['JSON instead of a stream', 'p1', MESSAGES_PATH, () => jsonReply(200, messagesBody('msg_p1')), /answered a stream request with application\/json/],
  ];
  for (const [name, provider, path, handler, reason] of cases) {
    const s = await setup(t);
    const second = provider === 'c1' ? 'c2' : 'p2';
    s.transports.on(provider, handler);
    s.transports.on(second, () => sseOf(provider === 'c1' ? chatStream('c-2') : messagesStream('msg_p2')));
    const r = await call(s.url, path, { offers: [provider, second], stream: true });
    await s.settled();
    t.equal(r.status, 200, name);
    t.equal(r.headers['x-service-listing'], `m@${second}`, `${name}: served by the second offer`);
    t.notMatch(r.text, /msg_p1|c-1|rate limited|Overloaded/, `${name}: nothing of the first attempt`);
    t.match(s.contexts[0].attempts, [{ outcome: 'failed', reason }, { outcome: 'ok' }], name);
  }
});

/** A chat vendor's in-stream error (openai-node throws on it); its message echoes c1's key. */
const chatErrorChunk = ev(undefined, { error: { message: 'The server had an error (key-c1)', type: 'server_error', param: null, code: null } });

t.test('after the first output event, an upstream break ends the stream with ONE error event in the client format', async (t) => {
  type Check = (err: any, ev: SseEvent, ctx: RequestContext) => void;
  const broke = (t: Test, name: string): Check => (err, e, ctx) => {
    if (e.event === undefined) t.match(err, { error: { type: 'server_error', code: 'upstream_stream_error', message: /The upstream stream broke/ } }, name);
    else t.match(err, { type: 'error', error: { type: 'api_error', message: /The upstream stream broke/ } }, name);
    t.equal(ctx.error?.code, 'upstream_stream_error', name);
  };
  const cases: [string, string, string, 'reset' | 'error-event', (t: Test, name: string) => Check][] = [
    ['messages client, reset', MESSAGES_PATH, 'p1', 'reset', broke],
    ['chat client, reset', CHAT_PATH, 'c1', 'reset', broke],
    // Same format: the vendor's own event, as it came (scrubbed).
    ['messages client, messages upstream error event', MESSAGES_PATH, 'p1', 'error-event', (t, name) => (_err, e, ctx) => {
      t.same(e, parseSse(overloadedEvent)[0], `${name}: the vendor's event, unchanged`);
      t.match(ctx.error, { type: 'overloaded_error', code: 'overloaded_error', message: 'Overloaded' }, name);
    }],
    ['chat client, chat upstream error chunk', CHAT_PATH, 'c1', 'error-event', (t, name) => (err, e, ctx) => {
      t.equal(e.event, undefined, `${name}: a data-only chunk, as it came`);
      t.same(err, { error: { message: 'The server had an error ([redacted])', type: 'server_error', param: null, code: null } }, `${name}: scrubbed, else unchanged`);
      t.match(ctx.error, { type: 'overloaded_error', code: 'server_error', message: 'The server had an error ([redacted])' }, name);
    }],
    // Converted: the nearest type of the client's format, the vendor's message.
    ['chat client, messages upstream error event', CHAT_PATH, 'p1', 'error-event', (t, name) => (err, e) => {
      t.equal(e.event, undefined, `${name}: chat error chunks have no event name`);
      t.same(err, { error: { message: 'Overloaded', type: 'service_unavailable', param: null, code: 'overloaded_error' } }, name);
    }],
    ['messages client, chat upstream error chunk', MESSAGES_PATH, 'c1', 'error-event', (t, name) => (err, e) => {
      t.equal(e.event, 'error', name);
      t.same(err, { type: 'error', error: { type: 'overloaded_error', message: 'The server had an error ([redacted])' } }, name);
    }],
  ];
  for (const [name, path, provider, breakWith, check] of cases) {
    const s = await setup(t);
    const body = new Body();
    const chatUp = provider === 'c1';
    const events = chatUp ? chatStream('c-1') : messagesStream('msg_p1');
    const firstOutput = chatUp ? 1 : 2;
    s.transports.on(provider, () => {
      for (const e of events.slice(0, firstOutput + 1)) body.send(e);
      return sseReply(body);
    });
    s.transports.on(chatUp ? 'c2' : 'p2', () => sseOf(messagesStream('never')));
    let sent = false;
    const r = await call(s.url, path, {
      offers: [provider, chatUp ? 'c2' : 'p2'],
      stream: true,
      onText(text) {
        // Break once the client holds the first output: the offer is committed by then.
        if (!sent && parseSse(text).length >= firstOutput + 1) {
          sent = true;
          if (breakWith === 'reset') body.reset();
          else body.send(chatUp ? chatErrorChunk : overloadedEvent);
        }
      },
    });
    await s.settled();
    t.equal(r.status, 200, `${name}: the 200 stands`);
    t.ok(r.complete, `${name}: the response ended cleanly`);
    t.equal(s.transports.sent.length, 1, `${name}: no failover after commit`);
    const got = parseSse(r.text);
    const sentBefore = events.slice(0, firstOutput + 1).flatMap(parseSse);
    t.same(got.slice(0, sentBefore.length), sentBefore, `${name}: what was sent stays`);
    t.equal(got.length, sentBefore.length + 1, `${name}: then exactly one event, the error`);
    const last = got.at(-1)!;
    t.equal(last.event, path === CHAT_PATH ? undefined : 'error', `${name}: the format's error framing`);
    const ctx = s.contexts[0];
    check(t, name)(JSON.parse(last.data), last, ctx);
    t.notMatch(r.text, /key-c1/, `${name}: no provider key reaches the client`);
    t.equal(ctx.status, 200);
    t.equal(ctx.offer?.listing, `m@${provider}`);
    t.match(ctx.attempts, [{ listing: `m@${provider}`, outcome: 'failed' }]);
    t.same(s.dones.map((d) => d.outcome), ['error'], `${name}: onDone once, with error`);
  }
});

t.test("a vendor error event too large to pass on as it came is told in the client's format, its message cut", async (t) => {
  const s = await setup(t);
  const huge = ev('error', { type: 'error', error: { type: 'rate_limit_error', message: 'x'.repeat(20_000) } });
  s.transports.on('p1', () => sseOf([messagesStream('msg_p1').slice(0, 4).join('') + huge]));
  const r = await call(s.url, MESSAGES_PATH, { offers: ['p1'], stream: true });
  await s.settled();
  const last = parseSse(r.text).at(-1)!;
  t.equal(last.event, 'error');
  t.same(JSON.parse(last.data), { type: 'error', error: { type: 'rate_limit_error', message: 'x'.repeat(1000) + '…' } });
});

t.test('events of one upstream chunk leave together; an error event in the same chunk still comes after them', async (t) => {
  const s = await setup(t);
  const events = messagesStream('msg_p1');
  // The whole start of the stream and then a break, in a single chunk: committed by its output events.
  s.transports.on('p1', () => sseOf([events.slice(0, 4).join('') + overloadedEvent]));
  s.transports.on('p2', () => sseOf(messagesStream('never')));
  const r = await call(s.url, MESSAGES_PATH, { offers: ['p1', 'p2'], stream: true });
  await s.settled();
  const got = parseSse(r.text);
  const sentBefore = events.slice(0, 4).flatMap(parseSse);
  t.same(got.slice(0, sentBefore.length), sentBefore, 'the events before the error are all there, in order');
  t.equal(got.length, sentBefore.length + 1, 'then exactly one more event');
  t.equal(got.at(-1)!.event, 'error', 'the error event, last');
  t.equal(s.transports.sent.length, 1, 'no failover after commit');
});

t.test('the first output leaves at once, not after the rest of its upstream chunk went through the hooks', async (t) => {
  // One upstream chunk with what comes before the first output, the output and the event after it.
  const events = messagesStream('msg_p1');
  const upToOutput = Buffer.byteLength(events.slice(0, 4).join(''));
  let written: number | undefined;
  const probe: Plugin = {
    name: 'probe',
    onStream(ctx) {
      const socket = ctx.req.socket;
      return {
        onEvent(ev) {
          // The event after the first output: what the client connection was handed by then (a
          // fresh connection; corked writes do not count until they leave).
          if (ev.event === 'content_block_stop') written = socket.bytesWritten - socket.writableLength;
          return ev;
        },
      };
    },
  };
  const s = await setup(t, { plugins: [probe] });
  // The rest of the stream in later chunks: they must follow the early flush.
  s.transports.on('p1', () => sseOf([events.slice(0, 5).join(''), ...events.slice(5)]));
  const r = await call(s.url, MESSAGES_PATH, { offers: ['p1'], stream: true });
  await s.settled();
  t.equal(r.status, 200);
  t.same(parseSse(r.text), events.flatMap(parseSse), 'every event, in order');
  t.ok(written !== undefined && written > upToOutput, `the head and the events up to the first output (${upToOutput} bytes) were written before the next event was handled (${written})`);
});

t.test('a stream commits after the commit timeout even without output', async (t) => {
  const s = await setup(t, { upstream: { commit_timeout_ms: 100 } });
  const body = new Body();
  const events = messagesStream('msg_p1');
  s.transports.on('p1', () => {
    body.send(events[0]);
    return sseReply(body);
  });
  let headersBeforeOutput = false;
  const r = await call(s.url, MESSAGES_PATH, {
    offers: ['p1', 'p2'],
    stream: true,
    onResponse() {
      // The response head arrived while the upstream had sent no output yet: finish the stream now.
      headersBeforeOutput = true;
      for (const e of events.slice(1)) body.send(e);
      body.end();
    },
  });
  await s.settled();
  t.ok(headersBeforeOutput);
  t.equal(r.status, 200);
  t.equal(r.headers['x-service-listing'], 'm@p1');
  t.same(parseSse(r.text), events.flatMap(parseSse), 'the held-back event was sent at commit, then the rest');
  t.equal(s.transports.sent.length, 1);
});

// ================================================================= client gone

t.test('client destroys its request mid-stream → upstream aborted, onDone once with client_gone', async (t) => {
  const log: string[] = [];
  const s = await setup(t, { plugins: recorders(log) });
  const body = new Body();
  const events = messagesStream('msg_p1');
  s.transports.on('p1', () => {
    for (const e of events.slice(0, 4)) body.send(e);
    return sseReply(body);
  });
  const r = await call(s.url, MESSAGES_PATH, {
    offers: ['p1', 'p2'],
    stream: true,
    onText(text, req) {
      if (text.includes('text_delta')) req.destroy();
    },
  });
  await s.settled();
  t.equal(r.complete, false, 'the client went away before the end');
  t.ok(s.transports.sent[0].aborted, 'the upstream call was aborted');
  t.equal(s.transports.sent.length, 1, 'no failover for a gone client');
  t.same(s.dones.map((d) => d.outcome), ['client_gone']);
  t.same(log.filter((l) => l.includes('onDone')), ['C.onDone:client_gone', 'B.onDone:client_gone', 'A.onDone:client_gone']);
  t.equal(s.contexts[0].client.gone, true);
});

t.test('client gone while waiting for the upstream head → upstream aborted, client_gone, breaker trial freed', async (t) => {
  const clock = { now: 0 };
  const breakers = new Breakers({ failure_threshold: 1, cooldown_ms: 1000 }, () => clock.now);
  breakers.failure('m@p1');
  clock.now = 1000; // cooled down: the next request is the trial
  const s = await setup(t, { breakers });
  s.transports.on('p1', () => new Promise<never>(() => {}));
  let clientReq: http.ClientRequest | undefined;
  const pending = call(s.url, MESSAGES_PATH, { offers: ['p1'], onRequest: (req) => (clientReq = req) });
  await s.transports.calls(1);
  t.equal(breakers.tryAcquire('m@p1'), false, 'the trial slot is taken');
  clientReq!.destroy();
  t.equal((await pending).complete, false);
  await s.settled();
  t.ok(s.transports.sent[0].aborted);
  t.same(s.dones.map((d) => d.outcome), ['client_gone']);
  t.equal(breakers.tryAcquire('m@p1'), true, 'the trial slot is free again');
});

// ================================================================= hooks that fail during an attempt

t.test('a stream hook that throws: the exception stays inside the chain and the client gets an error', async (t) => {
  const s = await setup(t, {
    upstream: { idle_timeout_ms: 300 },
    plugins: [
      {
        name: 'buggy-stream',
        onStream: () => ({
          onEvent(e) {
            if (e.event === 'content_block_delta') throw new TypeError('hook bug');
            return e;
          },
        }),
      },
    ],
  });
  const body = new Body();
  const events = messagesStream('msg_p1');
  s.transports.on('p1', () => {
    // events[3] is the first delta: it commits the stream, then the hook throws on it.
    for (const e of events.slice(0, 4)) body.send(e);
    return sseReply(body);
  });
  const r = await call(s.url, MESSAGES_PATH, { offers: ['p1'], stream: true });
  await s.settled();
  t.same(body.escaped.map(String), [], 'no exception escaped into the upstream body (with a real socket that is a process crash)');
  t.equal(r.status, 200);
  const got = parseSse(r.text);
  t.equal(got.filter((e) => e.event === 'error').length, 1, 'one error event');
  t.equal(got.at(-1)?.event, 'error');
  t.same(s.dones.map((d) => d.outcome), ['error']);
});

t.test('a response hook that throws during a half-open trial does not keep the offer blocked', async (t) => {
  const clock = { now: 0 };
  const breakers = new Breakers({ failure_threshold: 1, cooldown_ms: 1000 }, () => clock.now);
  let throwInHook = true;
  const s = await setup(t, {
    breakers,
    plugins: [
      {
        name: 'buggy-body',
        onResponseBody() {
          if (throwInHook) throw new TypeError('hook bug');
        },
      },
    ],
  });
  s.transports.on('p1', () => jsonReply(503, {}));
  t.equal((await call(s.url, MESSAGES_PATH, { offers: ['p1'] })).status, 503, 'the offer fails once: open');
  clock.now += 1000;
  s.transports.on('p1', () => jsonReply(200, messagesBody('msg_p1')));
  t.equal((await call(s.url, MESSAGES_PATH, { offers: ['p1'] })).status, 500, 'the trial: the upstream answered, our hook failed');
  throwInHook = false;
  const r = await call(s.url, MESSAGES_PATH, { offers: ['p1'] });
  await s.settled();
  t.equal(s.transports.sent.length, 3, 'the offer is tried again (the trial slot was not leaked)');
  t.equal(r.status, 200, 'and serves the request');
});

t.test('after commit, a clean close before the final event ends with an error event, not a made-up ending', async (t) => {
  for (const [path, provider, events] of [
    [MESSAGES_PATH, 'p1', messagesStream('msg_p1').slice(0, 4)],
    [CHAT_PATH, 'c1', chatStream('c-1').slice(0, 2)],
  ] as const) {
    const s = await setup(t);
    s.transports.on(provider, () => sseOf([...events]));
    const r = await call(s.url, path, { offers: [provider], stream: true });
    await s.settled();
    t.equal(r.status, 200, path);
    const last = parseSse(r.text).at(-1)!;
    t.match(last.data, /ended before its final event/, `${path}: the stream ends with an error`);
    t.same(s.dones.map((d) => d.outcome), ['error']);
  }
});
