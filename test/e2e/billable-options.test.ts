// Request options the offer's prices do not cover, end to end against the simulated upstream:
// refused with a 400 naming them (both client formats, no hold, no charge, no upstream call) unless
// the offer declares them; neutral fields forwarded, unknown ones dropped; betas from the provider's
// list forwarded, others dropped, billable ones refused; a chat client's betas never forwarded.
import t, { type Test } from 'tap';
import http from 'node:http';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
t.before(async () => {
  gw = await startGateway({
    configure(cfg) {
      // test/claude's cheapest offer covers the priority tier and the 1M context beta; test/gpt's offers cover nothing extra.
      cfg.offers[0].allow = { fields: ['service_tier'], betas: ['context-1m'] };
    },
  });
});
t.teardown(() => gw.close());

function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; requestId: string; json: any }>((resolve, reject) => {
    const req = http.request(
      `${gw.url}${path}`,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${gw.apiKey}`,
          ...(path.startsWith('/v1/messages') ? { 'anthropic-version': '2023-06-01' } : {}),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, requestId: String(res.headers['x-request-id']), json: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const user = (text = 'Hi <<sim words=3>>') => [{ role: 'user', content: text }];
const balance = () => gw.store.ledger.balance(gw.accountId);

/** Send a request that must be refused before any upstream call, hold or charge; its error body. */
async function refused(t: Test, path: string, body: unknown, headers: Record<string, string> = {}) {
  const before = await balance();
  const calls = gw.sim.received.length;
  const r = await post(path, body, headers);
  await gw.gateway.requestFinished(r.requestId);
  t.equal(r.status, 400);
  t.equal(gw.sim.received.length, calls, 'no upstream call');
  t.same(await balance(), before, 'nothing held or charged');
  return r.json;
}

t.test('a billable field no offer declares: 400 naming it, in the client\'s format', async (t) => {
  const chat = await refused(t, '/v1/chat/completions', { model: 'test/gpt', max_tokens: 50, messages: user(), service_tier: 'priority' });
  t.match(chat.error, { type: 'invalid_request_error', code: 'billable_option_not_offered', param: 'service_tier', message: /service_tier "priority"/ });
  const msg = await refused(t, '/v1/messages', { model: 'test/claude', max_tokens: 50, messages: user(), mcp_servers: [{ type: 'url', url: 'https://mcp.example.com', name: 'x' }] });
  t.match(msg, { type: 'error', error: { type: 'invalid_request_error', message: /mcp_servers/ } });
  // Whatever the upstream format: test/gpt's messages offer does not declare it either.
  const chatField = await refused(t, '/v1/chat/completions', { model: 'test/gpt', max_tokens: 50, messages: user(), web_search_options: {} });
  t.equal(chatField.error.param, 'web_search_options');
});

t.test('a declared billable field is forwarded to the offer that declares it', async (t) => {
  gw.sim.clear();
  const r = await post('/v1/messages', { model: 'test/claude', max_tokens: 50, messages: user(), service_tier: 'priority' });
  t.equal(r.status, 200);
  t.equal(gw.sim.received.length, 1);
  t.equal(gw.sim.received[0].body.model, 'claude-up');
  t.equal(gw.sim.received[0].body.service_tier, 'priority');
});

t.test('neutral fields are forwarded, unknown ones dropped', async (t) => {
  gw.sim.clear();
  const r = await post('/v1/messages', {
    model: 'test/claude',
    max_tokens: 50,
    messages: user(),
    metadata: { user_id: 'u1' },
    service_tier: 'auto',
    context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    some_future_field: { a: 1 },
  });
  t.equal(r.status, 200);
  const got = gw.sim.received[0].body;
  t.same(got.metadata, { user_id: 'u1' });
  t.equal(got.service_tier, 'auto');
  t.same(got.context_management, { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] });
  t.notOk('some_future_field' in got, 'an unknown field is not forwarded');

  gw.sim.clear();
  const c = await post('/v1/chat/completions', { model: 'test/gpt', max_tokens: 50, messages: user(), user: 'u2', store: false, seed: 7, prompt_cache_key: 'k', service_tier: 'default', future_thing: true });
  t.equal(c.status, 200);
  t.match(gw.sim.received[0].body, { model: 'gpt-up', user: 'u2', store: false, seed: 7, prompt_cache_key: 'k', service_tier: 'default' });
  t.notOk('future_thing' in gw.sim.received[0].body);
});

t.test('betas: the provider\'s list forwarded, unknown dropped, billable refused unless declared', async (t) => {
  gw.sim.clear();
  const r = await post('/v1/messages', { model: 'test/claude', max_tokens: 50, messages: user() }, { 'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14,made-up-2030-01-01' });
  t.equal(r.status, 200);
  t.equal(gw.sim.received[0].headers['anthropic-beta'], 'claude-code-20250219,interleaved-thinking-2025-05-14');

  gw.sim.clear();
  const unknownOnly = await post('/v1/messages', { model: 'test/claude', max_tokens: 50, messages: user() }, { 'anthropic-beta': 'made-up-2030-01-01' });
  t.equal(unknownOnly.status, 200);
  t.equal(gw.sim.received[0].headers['anthropic-beta'], undefined, 'nothing left to forward');

  const long = await refused(t, '/v1/messages', { model: 'test/gpt', max_tokens: 50, messages: user() }, { 'anthropic-beta': 'context-1m-2025-08-07' });
  t.match(long.error, { type: 'invalid_request_error', message: /context-1m-2025-08-07.*anthropic-beta/ });

  gw.sim.clear();
  const declared = await post('/v1/messages', { model: 'test/claude', max_tokens: 50, messages: user() }, { 'anthropic-beta': 'context-1m-2025-08-07' });
  t.equal(declared.status, 200);
  t.equal(gw.sim.received[0].headers['anthropic-beta'], 'context-1m-2025-08-07', 'forwarded to the offer that declares it');
});

t.test('a chat client\'s anthropic-beta is never forwarded, even to a messages upstream', async (t) => {
  gw.sim.clear();
  const r = await post('/v1/chat/completions', { model: 'test/claude', max_tokens: 50, messages: user() }, { 'anthropic-beta': 'claude-code-20250219,context-1m-2025-08-07' });
  t.equal(r.status, 200);
  t.equal(gw.sim.received[0].path, '/v1/messages', 'served by the messages offer');
  t.equal(gw.sim.received[0].headers['anthropic-beta'], undefined);
});
