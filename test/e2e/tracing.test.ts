// Traces: with tracing.otlp_endpoint set, a request's spans reach an in-process OTLP/HTTP receiver
// (the exporter's JSON protocol): a SERVER span for the request, child of the client's traceparent,
// and a CLIENT span per upstream attempt, its context sent to the upstream as traceparent; GenAI
// and HTTP attributes. Without it, no traceparent goes upstream and the chain has no tracing plugin.
import t, { type Test } from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status: { code?: number; message?: string };
}

/** OTLP JSON AnyValue → a plain value. */
function value(v: any): unknown {
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('boolValue' in v) return v.boolValue;
  if ('arrayValue' in v) return (v.arrayValue.values ?? []).map(value);
  return v;
}

/** A node:http OTLP/HTTP receiver: POST /v1/traces, JSON. */
async function startReceiver() {
  const spans: Span[] = [];
  const contentTypes: string[] = [];
  const server = http.createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (text += c));
    req.on('end', () => {
      contentTypes.push(String(req.headers['content-type']));
      if (req.url === '/v1/traces') {
        for (const rs of JSON.parse(text).resourceSpans ?? [])
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? [])
              spans.push({ ...s, attributes: Object.fromEntries((s.attributes ?? []).map((a: any) => [a.key, value(a.value)])), status: s.status ?? {} });
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, contentTypes, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** A chat upstream: /bad/… answers 503, /good/… a completion; every traceparent it got, by path. */
async function startUpstream() {
  const received: { path: string; traceparent?: string; authorization?: string }[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.push({ path: req.url!, traceparent: req.headers.traceparent as string | undefined });
      if (req.url!.startsWith('/bad/')) {
        res.writeHead(503, { 'content-type': 'application/json' });
        return res.end('{"error":{"message":"overloaded"}}');
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({
        id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'good-model-2025-01-01',
        choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'Hello there.' } }],
        usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
      }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) };
}

function configure(upstream: string, otlp?: string) {
  return (cfg: Record<string, any>) => {
    cfg.providers = [
      { id: 'bad', format: 'chat', base_url: `${upstream}/bad/v1`, api_key: 'sk-bad-provider-key-000000' },
      { id: 'good', format: 'chat', base_url: `${upstream}/good/v1`, api_key: 'sk-good-provider-key-000000' },
    ];
    cfg.models = [{ id: 't/m', context_window: 100_000, max_output_tokens: 1000 }];
    // The failing offer is cheaper: it is tried first.
    cfg.offers = [
      { listing: 't/m@bad', model: 't/m', provider: 'bad', upstream_model: 'bad-model', price: { input: 1, output: 2 } },
      { listing: 't/m@good', model: 't/m', provider: 'good', upstream_model: 'good-model', price: { input: 2, output: 4 } },
    ];
    if (otlp) cfg.tracing = { otlp_endpoint: otlp };
  };
}

/** The receiver (when `tracing`), the upstream and a gateway whose failing offer is tried first. */
async function failoverSetup(t: Test, tracing = true) {
  const receiver = tracing ? await startReceiver() : undefined;
  const upstream = await startUpstream();
  const gw = await startGateway({ configure: configure(upstream.url, receiver?.url) });
  t.teardown(async () => {
    await gw.close();
    await upstream.close();
    await receiver?.close();
  });
  return { receiver: receiver!, upstream, gw };
}

function post(gw: TestGateway, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; requestId: string }>((resolve, reject) => {
    const req = http.request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json', ...headers },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, requestId: String(res.headers['x-request-id']) }));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ model: 't/m', max_tokens: 50, messages: [{ role: 'user', content: 'a prompt' }] }));
  });
}

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';

t.test('spans of a request with a failover, under the client trace, exported as OTLP JSON', async (t) => {
  const { receiver, upstream, gw } = await failoverSetup(t);

  const r = await post(gw, { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` });
  t.equal(r.status, 200);
  await gw.gateway.requestFinished(r.requestId);
  await gw.gateway.tracing!.flush();

  t.ok(receiver.contentTypes.every((c) => c.startsWith('application/json')), 'the JSON protocol');
  t.ok(receiver.contentTypes.length > 0);
  const spans = receiver.spans;
  t.equal(spans.length, 3, 'one request span, two attempt spans');
  const request = spans.find((s) => s.kind === 2)!;
  const attempts = spans.filter((s) => s.kind === 3).sort((a, b) => a.name.localeCompare(b.name));
  t.equal(request.name, 'POST /v1/chat/completions');
  t.same(attempts.map((s) => s.name), ['chat bad-model', 'chat good-model']);
  for (const s of spans) t.equal(s.traceId, CLIENT_TRACE, `${s.name}: the client's trace`);
  t.equal(request.parentSpanId, CLIENT_SPAN, 'the request span is the child of the client span');
  for (const s of attempts) t.equal(s.parentSpanId, request.spanId, `${s.name}: child of the request span`);

  t.match(request.attributes, {
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': 't/m',
    'gen_ai.request.max_tokens': 50,
    'gen_ai.usage.input_tokens': 12,
    'gen_ai.usage.output_tokens': 3,
    'gen_ai.response.finish_reasons': ['stop'],
    'http.request.method': 'POST',
    'http.route': '/v1/chat/completions',
    'http.response.status_code': 200,
    'gateway.request_id': r.requestId,
    'gateway.listing': 't/m@good',
    'gateway.attempts': 2,
  });
  t.notOk('error.type' in request.attributes);
  const [bad, good] = attempts;
  t.match(bad.attributes, { 'gen_ai.provider.name': 'bad', 'gen_ai.request.model': 'bad-model', 'http.response.status_code': 503, 'error.type': '503', 'server.address': '127.0.0.1', 'url.path': '/bad/v1/chat/completions' });
  t.equal(bad.status.code, 2, 'the failed attempt: status ERROR');
  t.match(good.attributes, {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'good',
    'gen_ai.system': 'good',
    'gen_ai.request.model': 'good-model',
    'gen_ai.request.max_tokens': 50,
    'gen_ai.response.model': 'good-model-2025-01-01',
    'gen_ai.response.id': 'chatcmpl-1',
    'gen_ai.response.finish_reasons': ['stop'],
    'gen_ai.usage.input_tokens': 12,
    'gen_ai.usage.output_tokens': 3,
    'http.response.status_code': 200,
  });
  t.notOk('error.type' in good.attributes);
  t.notOk(JSON.stringify(spans).includes('provider-key'), 'no provider key in a span');
  t.notOk(JSON.stringify(spans).includes('a prompt'), 'no prompt in a span');

  // Each upstream call carried its attempt span's context.
  const sent = Object.fromEntries(upstream.received.map((u) => [u.path.split('/')[1], u.traceparent]));
  t.equal(sent.bad, `00-${CLIENT_TRACE}-${bad.spanId}-01`);
  t.equal(sent.good, `00-${CLIENT_TRACE}-${good.spanId}-01`);
});

t.test('a streamed answer: finish reasons, response model and usage read from the upstream events', async (t) => {
  const receiver = await startReceiver();
  const gw = await startGateway({ configure: (cfg) => void (cfg.tracing = { otlp_endpoint: receiver.url }) });
  t.teardown(async () => {
    await gw.close();
    await receiver.close();
  });
  const r = await new Promise<{ status: number; requestId: string }>((resolve, reject) => {
    const req = http.request(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': gw.apiKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, requestId: String(res.headers['x-request-id']) }));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'test/claude', max_tokens: 40, stream: true, messages: [{ role: 'user', content: 'hello' }] }));
  });
  t.equal(r.status, 200);
  await gw.gateway.requestFinished(r.requestId);
  await gw.gateway.tracing!.flush();
  const row = (await gw.store.history.get(r.requestId))!;
  const attempt = receiver.spans.find((s) => s.kind === 3)!;
  t.match(attempt.attributes, {
    'gen_ai.provider.name': 'sim-messages',
    'gen_ai.request.model': 'claude-up',
    'gen_ai.response.model': String,
    'gen_ai.response.finish_reasons': [String],
    'gen_ai.usage.output_tokens': row.usage.output,
    'gateway.upstream.format': 'messages',
  });
  t.ok(row.usage.output > 0);
});

t.test('without a client traceparent the request starts a trace of its own', async (t) => {
  const { receiver, upstream, gw } = await failoverSetup(t);
  const r = await post(gw);
  await gw.gateway.requestFinished(r.requestId);
  await gw.gateway.tracing!.flush();
  const request = receiver.spans.find((s) => s.kind === 2)!;
  t.notOk(request.parentSpanId, 'a root span');
  t.match(upstream.received.at(-1)!.traceparent, new RegExp(`^00-${request.traceId}-[0-9a-f]{16}-01$`));
});

t.test('tracing off: no traceparent upstream, no tracing plugin in the chain', async (t) => {
  const { upstream, gw } = await failoverSetup(t, false);
  const r = await post(gw, { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` });
  t.equal(r.status, 200);
  t.same(upstream.received.map((u) => u.traceparent), [undefined, undefined]);
  t.equal(gw.gateway.tracing, undefined);
});

t.test('a collector that cannot be reached costs no request: a warning in the log', async (t) => {
  const closed = await startReceiver();
  await closed.close(); // its port now refuses connections
  const logged: { level: string; msg: string }[] = [];
  const upstream = await startUpstream();
  // The exporter retries a refused connection until its timeout (10 s by default; the SDK reads this variable).
  process.env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT = '300';
  t.teardown(() => void delete process.env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT);
  const gw = await startGateway({ configure: configure(upstream.url, closed.url), log: (level, msg) => void logged.push({ level, msg }) });
  t.teardown(() => upstream.close());
  const r = await post(gw);
  t.equal(r.status, 200);
  await gw.gateway.requestFinished(r.requestId);
  await gw.gateway.tracing!.flush();
  t.ok(logged.some((l) => l.level === 'warn' && l.msg.startsWith('tracing: spans could not be exported')), 'the export failure is a warning');
  await gw.close();
  t.pass('closed');
});

t.test('sampling through the SDK variables: a request left out makes no span, and the upstream hears it is not sampled', async (t) => {
  process.env.OTEL_TRACES_SAMPLER = 'always_off';
  t.teardown(() => void delete process.env.OTEL_TRACES_SAMPLER);
  const { receiver, upstream, gw } = await failoverSetup(t);
  const r = await post(gw);
  t.equal(r.status, 200);
  await gw.gateway.requestFinished(r.requestId);
  await gw.gateway.tracing!.flush();
  t.same(receiver.spans, []);
  t.match(upstream.received.at(-1)!.traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
});
