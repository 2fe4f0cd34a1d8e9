// Prometheus metrics through a real gateway and the simulator: after known requests the scrape
// holds the right counts, tokens and charges (equal to the request history's), attempts, failovers,
// breaker state, 402s and 429s by reason, and no series for a model a client made up. Metrics are
// off unless configured: no listener, and nothing at /metrics on the public port.
import t from 'tap';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { postChat } from '../helpers/post-chat.js';
import { get, scrape, type Scrape } from '../helpers/prometheus.js';
import { packageRoot } from '../../lib/package-root.js';

let gw: TestGateway;
t.before(async () => {
  gw = await startGateway({
    configure: (c) => {
      c.metrics = { host: '127.0.0.1', port: 0 };
      c.breaker = { failure_threshold: 3, cooldown_ms: 600_000 }; // an opened breaker stays open for the test
    },
  });
});
t.teardown(() => gw.close());

const metrics = () => scrape(gw.gateway.metricsUrl!);

/** POST a chat request and wait until it has fully ended (metrics recorded, history queued). */
async function chat(body: object, key = gw.apiKey) {
  const r = await postChat(gw.url, key, body);
  await gw.gateway.requestFinished(r.requestId);
  return r;
}

t.test('counts, latency, tokens and the charge of served requests equal the history', async (t) => {
  const ids: string[] = [];
  for (const words of [3, 5]) {
    const r = await chat({ model: 'test/gpt', max_tokens: 50, messages: [{ role: 'user', content: `Hi <<sim words=${words} cache_read=4>>` }] });
    t.equal(r.status, 200);
    ids.push(r.requestId);
  }
  const rows = await Promise.all(ids.map((id) => gw.store.history.get(id)));
  const m = await metrics();
  t.equal(m.sum('gateway_requests_total', { route: 'chat', model: 'test/gpt', listing: 'test/gpt@sim-chat', status: '2xx' }), 2);
  t.equal(m.sum('gateway_request_duration_seconds_count', { route: 'chat', model: 'test/gpt' }), 2);
  t.equal(m.sum('gateway_time_to_first_byte_seconds_count', { route: 'chat', model: 'test/gpt' }), 2);
  // The finest bucket resolves the gateway's own sub-millisecond overhead.
  t.ok(m.find('gateway_request_duration_seconds_bucket', { le: '0.0001' }).length > 0, 'a 0.1 ms bucket');
  t.ok(m.find('gateway_request_duration_seconds_bucket', { le: '60' }).length > 0, 'a one-minute bucket');
  const total = (f: (u: any) => number) => rows.reduce((a, r) => a + f(r!.usage), 0);
  t.equal(m.sum('gateway_tokens_total', { model: 'test/gpt', class: 'input' }), total((u) => u.input));
  t.equal(m.sum('gateway_tokens_total', { model: 'test/gpt', class: 'output' }), total((u) => u.output));
  t.equal(m.sum('gateway_tokens_total', { model: 'test/gpt', class: 'cache_read' }), total((u) => u.cacheRead));
  t.ok(total((u) => u.cacheRead) > 0 && total((u) => u.output) === 8, 'the known usage was charged');
  const cost = rows.reduce((a, r) => a + r!.costNano, 0);
  t.ok(cost > 0);
  t.equal(m.sum('gateway_charged_nano_usd_total', { model: 'test/gpt' }), cost, 'charged nano-USD equal the history cost');
  t.equal(m.sum('gateway_upstream_attempts_total', { listing: 'test/gpt@sim-chat', outcome: 'ok' }), 2);
});

t.test('holds open while a stream runs, none after', async (t) => {
  let release!: () => void;
  const first = new Promise<void>((r) => (release = r));
  const req = http.request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' } }, (res) => {
    res.once('data', () => release());
    res.resume();
  });
  const done = new Promise<string>((resolve) => req.on('response', (res) => res.on('end', () => resolve(String(res.headers['x-request-id'])))));
  req.end(JSON.stringify({ model: 'test/gpt', max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'x <<sim words=30 delay_ms=10>>' }] }));
  await first;
  const during = await metrics();
  t.equal(during.sum('gateway_holds_open'), 1);
  t.ok(during.sum('gateway_held_nano_usd') > 0, 'its hold is counted');
  t.equal(during.sum('gateway_requests_in_flight'), 1);
  await gw.gateway.requestFinished(await done);
  const after = await metrics();
  t.equal(after.sum('gateway_holds_open'), 0);
  t.equal(after.sum('gateway_held_nano_usd'), 0);
});

t.test('failed attempts by reason, failovers, the breaker opening and skipping', async (t) => {
  const failing = { model: 'test/claude', max_tokens: 20, messages: [{ role: 'user', content: 'Hi <<sim fault=status status=503 model=claude-up>>' }] };
  for (let i = 0; i < 3; i++) t.equal((await chat(failing)).status, 200, 'the next offer serves');
  let m = await metrics();
  t.equal(m.sum('gateway_upstream_attempts_total', { listing: 'test/claude@sim-messages', outcome: 'failed', reason: 'http_503' }), 3);
  t.equal(m.sum('gateway_upstream_attempts_total', { listing: 'test/claude@sim-chat', outcome: 'ok' }), 3);
  t.equal(m.sum('gateway_failovers_total', { model: 'test/claude' }), 3);
  t.equal(m.sum('gateway_breaker_state', { listing: 'test/claude@sim-messages' }), 1, 'open after 3 failures');
  t.equal(m.sum('gateway_breaker_state', { listing: 'test/claude@sim-chat' }), 0);

  t.equal((await chat(failing)).status, 200);
  m = await metrics();
  t.equal(m.sum('gateway_upstream_attempts_total', { listing: 'test/claude@sim-messages', outcome: 'skipped', reason: 'breaker_open' }), 1);
  t.equal(m.sum('gateway_failovers_total', { model: 'test/claude' }), 4);
  t.equal(m.sum('gateway_requests_total', { model: 'test/claude', listing: 'test/claude@sim-chat', status: '2xx' }), 4);
});

t.test('402 and 429 by reason', async (t) => {
  const broke = await gw.store.accounts.create({ email: 'broke@example.com' });
  const { secret: brokeKey } = await gw.store.keys.create({ accountId: broke.id, name: 'no credit' });
  const { secret: slowKey } = await gw.store.keys.create({ accountId: gw.accountId, name: 'one a minute', rpm: 1 });
  const body = { model: 'test/gpt', max_tokens: 20, messages: [{ role: 'user', content: 'Hi' }] };
  t.equal((await chat(body, brokeKey)).status, 402);
  t.equal((await chat(body, slowKey)).status, 200);
  t.equal((await chat(body, slowKey)).status, 429);
  const m = await metrics();
  t.equal(m.sum('gateway_refusals_total', { status: '402', reason: 'insufficient_credit' }), 1);
  t.equal(m.sum('gateway_refusals_total', { status: '429', reason: 'rate_limit_requests' }), 1);
  t.equal(m.sum('gateway_requests_total', { status: '4xx', model: 'test/gpt' }), 1, 'the 402');
  // The request rate is checked on the headers, before the body (and its model) is read.
  t.equal(m.sum('gateway_requests_total', { status: '4xx', model: 'none' }), 1, 'the 429');
});

t.test('a model the client made up makes no series of its own', async (t) => {
  // Only the gateway's own series: the process metrics gain some as the process runs (a new kind of GC).
  const count = (m: Scrape) => m.samples.filter((s) => s.name.startsWith('gateway_')).length;
  const first = await metrics();
  const none = first.sum('gateway_requests_total', { model: 'none', listing: 'none', status: '4xx' });
  for (const model of ['made/up-1', 'made/up-2', 'made/up-3']) t.equal((await chat({ model, messages: [{ role: 'user', content: 'x' }] })).status, 404);
  const m = await metrics();
  t.notOk(m.samples.some((s) => Object.values(s.labels).some((v) => v.startsWith('made/'))), 'no label holds the unknown id');
  t.equal(m.sum('gateway_requests_total', { model: 'none', listing: 'none', status: '4xx' }) - none, 3, 'counted under model="none"');
  // The first unknown model may add series for model="none" on this route; the next ones add nothing.
  const once = count(m);
  t.equal((await chat({ model: 'made/up-4', messages: [{ role: 'user', content: 'x' }] })).status, 404);
  t.equal(count(await metrics()), once, 'another unknown model adds no series');
  t.notOk(m.samples.some((s) => 'key_id' in s.labels), 'no key ids unless metrics.key_labels');
});

t.test('store, event loop and process metrics', async (t) => {
  await gw.store.flush();
  const m = await metrics();
  t.ok(m.sum('gateway_store_batch_commit_seconds_count') > 0, 'batch commits timed');
  t.equal(m.sum('gateway_store_batches_failed_total'), 0);
  t.equal(m.sum('gateway_store_rows_waiting'), 0);
  t.equal(m.sum('gateway_ready'), 1);
  for (const name of ['nodejs_eventloop_lag_seconds', 'nodejs_eventloop_lag_p99_seconds', 'process_resident_memory_bytes', 'process_cpu_seconds_total'])
    t.ok(m.find(name).length > 0, name);
});

/** Metric names an alert rule expression refers to. */
function namesIn(expr: string): string[] {
  return [...expr.matchAll(/\b((?:gateway|nodejs|process)_[a-z0-9_]+)\b/g)].map((x) => x[1]);
}

t.test('every metric the example alert rules and dashboard use is served', async (t) => {
  const served = (await metrics()).names();
  const rules = parseYaml(readFileSync(join(packageRoot(), 'ops/prometheus-alerts.yml'), 'utf8')) as { groups: { rules: { alert: string; expr: string }[] }[] };
  const alerts = rules.groups.flatMap((g) => g.rules);
  t.ok(alerts.length >= 4);
  for (const want of ['GatewayOfferDown', 'GatewayLedgerBacklog', 'GatewayErrorRate', 'GatewayEventLoopLag'])
    t.ok(alerts.some((a) => a.alert === want), want);
  const dashboard = readFileSync(join(packageRoot(), 'ops/grafana-dashboard.json'), 'utf8');
  const exprs = [...alerts.map((a) => a.expr), ...[...dashboard.matchAll(/"expr":\s*"((?:[^"\\]|\\.)*)"/g)].map((x) => JSON.parse(`"${x[1]}"`) as string)];
  t.ok(exprs.length > alerts.length, 'the dashboard has queries');
  for (const name of new Set(exprs.flatMap(namesIn))) t.ok(served.has(name), `${name} is served`);
});

t.test('/metrics is not on the public port', async (t) => {
  t.equal((await get(`${gw.url}/metrics`)).status, 404);
});

t.test('metrics are off unless configured: no listener', async (t) => {
  const servers = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPServerWrap').length;
  const before = servers();
  const plain = await startGateway();
  t.teardown(() => plain.close());
  t.equal(plain.config.metrics, undefined);
  t.equal(plain.gateway.metricsUrl, undefined);
  t.equal(servers() - before, 2, 'the public port and the simulator only');
  t.equal((await get(`${plain.url}/metrics`)).status, 404);
  const on = await startGateway({ configure: (c) => (c.metrics = { port: 0 }) });
  t.teardown(() => on.close());
  t.equal(servers() - before, 5, 'metrics on: a listener more');
  t.match(on.gateway.metricsUrl, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/, 'on 127.0.0.1 by default');
});

t.test('metrics.key_labels: requests and charges by key id', async (t) => {
  const keyed = await startGateway({ configure: (c) => (c.metrics = { port: 0, key_labels: true }) });
  t.teardown(() => keyed.close());
  const r = await postChat(keyed.url, keyed.apiKey, { model: 'test/gpt', max_tokens: 20, messages: [{ role: 'user', content: 'Hi <<sim words=4>>' }] });
  await keyed.gateway.requestFinished(r.requestId);
  const row = await keyed.store.history.get(r.requestId);
  const m = await scrape(keyed.gateway.metricsUrl!);
  t.equal(m.sum('gateway_key_requests_total', { key_id: String(keyed.keyId) }), 1);
  t.equal(m.sum('gateway_key_charged_nano_usd_total', { key_id: String(keyed.keyId) }), row!.costNano);
  t.ok(row!.costNano > 0);
});
