// The request log: one JSON line per API request on stdout (here a captured stream), with the
// history row's figures, for refused requests too; never a key, a prompt or an answer; off with
// log.requests: false; left out below log.level.
import t, { type Test } from 'tap';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { postChat } from '../helpers/post-chat.js';
import type { LogStream } from '../../lib/log.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveProcess, writeDemoConfig } from '../helpers/process.js';

const PROVIDER_KEY = 'sk-provider-secret-0123456789abcdef';
const PROMPT = 'my-secret-prompt-words about the quarterly numbers';

function capture(): LogStream & { lines: () => any[]; text: () => string } {
  const chunks: string[] = [];
  return {
    write: (text: string) => chunks.push(text),
    text: () => chunks.join(''),
    lines: () => chunks.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l)),
  };
}

async function gateway(t: Test, log?: Record<string, unknown>): Promise<{ gw: TestGateway; out: ReturnType<typeof capture> }> {
  const out = capture();
  const gw = await startGateway({
    requestLog: out,
    configure(cfg) {
      for (const p of cfg.providers) p.api_key = PROVIDER_KEY;
      cfg.log = { format: 'json', ...log };
    },
  });
  t.teardown(() => gw.close());
  return { gw, out };
}
t.test('a served request: one line with the history row figures, no secret, no prompt, no answer', async (t) => {
  const { gw, out } = await gateway(t);
  const r = await postChat(gw.url, gw.apiKey, { model: 'test/gpt', max_tokens: 50, messages: [{ role: 'user', content: PROMPT }] });
  t.equal(r.status, 200);
  await gw.gateway.requestFinished(r.requestId);
  const lines = out.lines();
  t.equal(lines.length, 1, 'one line');
  const line = lines[0];
  const row = (await gw.store.history.get(r.requestId))!;
  t.match(line, {
    level: 'info',
    msg: 'request',
    request_id: r.requestId,
    account_id: gw.accountId,
    key_id: gw.keyId,
    route: 'chat',
    model: 'test/gpt',
    stream: false,
    listing: 'test/gpt@sim-chat',
    attempts: [{ listing: 'test/gpt@sim-chat', outcome: 'ok', status: 200, ms: Number }],
    status: 200,
    outcome: 'ok',
    input_tokens: row.usage.input,
    output_tokens: row.usage.output,
    cache_read_tokens: row.usage.cacheRead,
    cache_write_tokens: row.usage.cacheWrite,
    cache_write_1h_tokens: row.usage.cacheWrite1h,
    cost_nano: row.costNano,
    latency_ms: Number,
    ttfb_ms: Number,
    error: null,
  });
  t.ok(line.cost_nano > 0 && line.output_tokens > 0, 'a real charge');
  t.ok(line.ttfb_ms <= line.latency_ms);
  const text = out.text();
  const answer = String(r.json.choices[0].message.content);
  t.ok(answer.length > 10);
  for (const [what, secret] of [['prompt', 'my-secret-prompt'], ['answer', answer.slice(0, 20)], ['provider key', PROVIDER_KEY], ['client key', gw.apiKey]])
    t.notOk(text.includes(secret), `no ${what} in the line`);
});

t.test('refused requests have a line too: an unknown key, an unknown model', async (t) => {
  const { gw, out } = await gateway(t);
  const bad = await postChat(gw.url, 'sk-service-notakey000000000000000000', { model: 'test/gpt', messages: [{ role: 'user', content: PROMPT }] });
  t.equal(bad.status, 401);
  const unknown = await postChat(gw.url, gw.apiKey, { model: 'no/such-model', messages: [{ role: 'user', content: PROMPT }] });
  t.equal(unknown.status, 404);
  await gw.gateway.requestFinished(unknown.requestId);
  await gw.gateway.requestFinished(bad.requestId);
  const byId = new Map(out.lines().map((l) => [l.request_id, l]));
  t.match(byId.get(bad.requestId), { status: 401, error: 'invalid_api_key', account_id: null, key_id: null, attempts: [], cost_nano: 0, ttfb_ms: null, outcome: 'error' });
  t.match(byId.get(unknown.requestId), { status: 404, model: 'no/such-model', account_id: gw.accountId, listing: null, error: String });
  t.notOk(out.text().includes('notakey'), 'not even a wrong key');

  const long = await postChat(gw.url, gw.apiKey, { model: 'x'.repeat(100_000), messages: [{ role: 'user', content: PROMPT }] });
  await gw.gateway.requestFinished(long.requestId);
  const line = out.lines().find((l) => l.request_id === long.requestId);
  t.equal(line.model, 'x'.repeat(200) + '…', 'a client-sent model name is cut');
});

t.test('a body refused by its schema: the history row and the line show the model it asked for', async (t) => {
  const { gw, out } = await gateway(t);
  const r = await postChat(gw.url, gw.apiKey, { model: 'test/gpt', temperature: 'hot', messages: [{ role: 'user', content: PROMPT }] });
  t.equal(r.status, 400);
  await gw.gateway.requestFinished(r.requestId);
  t.match(await gw.store.history.get(r.requestId), { model: 'test/gpt', httpStatus: 400 });
  t.match(out.lines().find((l) => l.request_id === r.requestId), { model: 'test/gpt', status: 400 });
});

t.test('log.requests: false writes no line', async (t) => {
  const { gw, out } = await gateway(t, { requests: false });
  const r = await postChat(gw.url, gw.apiKey, { model: 'test/gpt', messages: [{ role: 'user', content: 'hi' }] });
  await gw.gateway.requestFinished(r.requestId);
  t.equal(out.text(), '');
});

t.test('log.level: warn leaves out the lines of requests that did not fail on our side', async (t) => {
  const { gw, out } = await gateway(t, { level: 'warn' });
  const r = await postChat(gw.url, gw.apiKey, { model: 'test/gpt', messages: [{ role: 'user', content: 'hi' }] });
  await gw.gateway.requestFinished(r.requestId);
  t.equal(out.text(), '');
});

t.test('a config reload applies log settings', async (t) => {
  const { gw, out } = await gateway(t, { requests: false });
  await gw.gateway.reload({ ...gw.config, log: { ...gw.config.log, requests: true } });
  const r = await postChat(gw.url, gw.apiKey, { model: 'test/gpt', messages: [{ role: 'user', content: 'hi' }] });
  await gw.gateway.requestFinished(r.requestId);
  t.equal(out.lines().length, 1);
});

t.test('gateway serve: request lines on stdout, operator lines on stderr, the last line out before the process exits', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-reqlog-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const gw = await serveProcess(writeDemoConfig(dir, 'demo@example.com', 5), { expectDemoKey: true });
  let out = '';
  gw.child.stdout!.on('data', (c) => (out += c));
  const exited = new Promise<number | null>((resolve) => gw.child.once('exit', resolve));
  const r = await postChat(gw.url, gw.key!, { model: 'test/gpt', messages: [{ role: 'user', content: PROMPT }] });
  t.equal(r.status, 200);
  // Stopped at once: the line still reaches stdout (lines wait up to 20 ms for their write: close writes them).
  gw.child.kill('SIGTERM');
  t.equal(await exited, 0);
  const lines = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  t.match(lines, [{ msg: 'request', request_id: r.requestId, status: 200, route: 'chat' }]);
  t.notOk(out.includes('my-secret-prompt'));
  await gw.logLine(/"msg":"stopped"/);
});
