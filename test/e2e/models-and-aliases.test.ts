// GET /v1/models/{id} and the paged models list through the official SDKs, and model aliases on
// every route: requests (both formats, converted, streamed), count_tokens, retrieve, history; and
// the shipped config answering Claude Code's own model ids with its output budgets.
import t from 'tap';
import { resolve } from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { errorWith } from '../helpers/error-pattern.js';
import { loadConfig } from '../../lib/config.js';
import { packageRoot } from '../../lib/package-root.js';
import { DashboardClient } from '../dashboard/client.js';

/** test/claude and test/gpt with aliases, and three more models so that pages have something to page. */
function withAliases(cfg: Record<string, any>): void {
  cfg.models[0].aliases = ['claude-opus-4-8', 'claude-sonnet-4-5-20250929'];
  cfg.models[1].aliases = ['gpt-latest'];
  for (const id of ['test/a', 'test/b', 'test/c']) {
    cfg.models.push({ id, context_window: 1000, max_output_tokens: 100 });
    cfg.offers.push({ listing: `${id}@sim-chat`, model: id, provider: 'sim-chat', upstream_model: 'x-up', price: { input: 1, output: 1 } });
  }
}

let gw: TestGateway;
t.before(async () => {
  gw = await startGateway({ configure: withAliases });
});
t.teardown(() => gw.close());

const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.apiKey, maxRetries: 0 });
const anthropic = () => new Anthropic({ baseURL: gw.url, apiKey: gw.apiKey, maxRetries: 0 });
const ALL = ['test/claude', 'test/gpt', 'test/a', 'test/b', 'test/c'];

t.test('models.retrieve in both SDKs: ids with "/" (the SDKs send %2F), and unencoded', async (t) => {
  const claude = await anthropic().models.retrieve('test/claude');
  t.match(claude, { type: 'model', id: 'test/claude', display_name: 'Test Claude', max_input_tokens: 200000, max_tokens: 8192, lifecycle: 'active' });
  t.match(claude.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  const gpt = await openai().models.retrieve('test/gpt');
  t.same({ ...gpt }, { id: 'test/gpt', object: 'model', created: Date.UTC(2025, 0, 1) / 1000, owned_by: 'test' });
  for (const [headers, shape] of [[{}, 'object'], [{ 'anthropic-version': '2023-06-01' }, 'type']] as const) {
    const res = await fetch(`${gw.url}/v1/models/test/claude`, { headers: { authorization: `Bearer ${gw.apiKey}`, ...headers } });
    t.equal(res.status, 200, `unencoded, ${shape} shape`);
    const body = await res.json();
    t.equal(body.id, 'test/claude');
    t.ok(shape in body, `the ${shape} shape`);
  }
  // Listed and retrieved items are the same objects.
  const listed = await anthropic().models.list({ limit: 1 });
  t.same(listed.data[0], claude);
});

t.test('an unknown model: each vendor\'s 404, through each SDK', async (t) => {
  await t.rejects(openai().models.retrieve('test/nope'), errorWith({
    status: 404,
    constructor: OpenAI.NotFoundError,
    code: 'model_not_found',
    type: 'invalid_request_error',
    param: 'model',
    error: { message: /The model "test\/nope" does not exist/ },
  }));
  await t.rejects(anthropic().models.retrieve('test/nope'), errorWith({
    status: 404,
    constructor: Anthropic.NotFoundError,
    error: { type: 'error', error: { type: 'not_found_error', message: /The model "test\/nope" does not exist/ } },
  }));
  const res = await fetch(`${gw.url}/v1/models/test%2Fnope`);
  t.equal(res.status, 401, 'the key is checked first');
  const post = await fetch(`${gw.url}/v1/models/test%2Fclaude`, { method: 'POST', headers: { authorization: `Bearer ${gw.apiKey}` } });
  t.equal(post.status, 405);
  t.equal(post.headers.get('allow'), 'GET');
});

t.test('retrieve answers what the list shows for the key: the same permission function', async (t) => {
  const { key, secret } = await gw.store.keys.create({ accountId: gw.accountId, name: 'gpt only', allowedModels: ['test/gpt'] });
  t.teardown(() => gw.store.keys.revoke(key.id));
  const limited = new Anthropic({ baseURL: gw.url, apiKey: secret, maxRetries: 0 });
  t.same((await limited.models.list()).data.map((m) => m.id), ['test/gpt']);
  t.equal((await limited.models.retrieve('test/gpt')).id, 'test/gpt');
  await t.rejects(limited.models.retrieve('test/claude'), errorWith({ status: 404, error: { error: { message: /not in this API key's allowed models/ } } }));
});

t.test('the messages-shape list pages as the vendor\'s: limit, after_id, before_id; the SDK pages through it', async (t) => {
  const first = await anthropic().models.list({ limit: 2 });
  t.same([first.data.map((m) => m.id), first.has_more, first.first_id, first.last_id], [['test/claude', 'test/gpt'], true, 'test/claude', 'test/gpt']);
  const ids: string[] = [];
  for await (const m of anthropic().models.list({ limit: 2 })) ids.push(m.id);
  t.same(ids, ALL, 'auto-paging with after_id walks every model once');
  const before = await anthropic().models.list({ limit: 2, before_id: 'test/c' });
  t.same([before.data.map((m) => m.id), before.has_more], [['test/a', 'test/b'], true]);
  const back: string[] = [];
  for await (const m of anthropic().models.list({ limit: 2, before_id: 'test/c' })) back.push(m.id);
  t.same(back.sort(), ALL.filter((id) => id !== 'test/c').sort(), 'paging backwards with before_id reaches the start');
  const after = await anthropic().models.list({ after_id: 'test/gpt', limit: 10 });
  t.same([after.data.map((m) => m.id), after.has_more, after.last_id], [['test/a', 'test/b', 'test/c'], false, 'test/c']);
  await t.rejects(anthropic().models.list({ limit: 0 }), errorWith({ status: 400, error: { error: { type: 'invalid_request_error', message: /limit: must be an integer from 1 to 1000/ } } }));
  await t.rejects(anthropic().models.list({ after_id: 'test/gone' }), errorWith({ status: 400, error: { error: { message: /after_id: no model "test\/gone"/ } } }));
  t.same((await openai().models.list()).data.map((m) => m.id), ALL, 'the chat shape is one whole list, aliases not in it');
});

t.test('an alias is answered by its model on every route; the answer and the history name the model', async (t) => {
  gw.sim.clear();
  const { data, response } = await anthropic()
    .messages.create({ model: 'claude-opus-4-8', max_tokens: 20, messages: [{ role: 'user', content: 'Hi <<sim words=3>>' }] })
    .withResponse();
  t.equal(response.headers.get('x-service-listing'), 'test/claude@sim-messages');
  t.equal(data.model, 'test/claude', 'the answer names the model, as the vendors answer for their aliases');
  t.equal(gw.sim.received.at(-1)!.body.model, 'claude-up', 'the upstream gets its own name');
  const id = response.headers.get('x-request-id')!;
  await gw.gateway.requestFinished(id);
  t.match(await gw.store.history.get(id), { model: 'test/claude', requestedModel: 'claude-opus-4-8', listing: 'test/claude@sim-messages', status: 'ok' });

  const stream = anthropic().messages.stream({ model: 'claude-sonnet-4-5-20250929', max_tokens: 20, messages: [{ role: 'user', content: 'Hi <<sim words=4>>' }] });
  t.equal((await stream.finalMessage()).model, 'test/claude', 'streamed');

  const chat = await openai().chat.completions.create({ model: 'gpt-latest', max_tokens: 20, messages: [{ role: 'user', content: 'Hi <<sim words=2>>' }] });
  t.equal(chat.model, 'test/gpt', 'chat format');
  const converted = await anthropic().messages.create({ model: 'gpt-latest', max_tokens: 20, messages: [{ role: 'user', content: 'Hi <<sim words=2>>' }] });
  t.equal(converted.model, 'test/gpt', 'converted to a chat upstream');
  const convertedBack = await openai().chat.completions.create({ model: 'claude-opus-4-8', max_tokens: 20, messages: [{ role: 'user', content: 'Hi <<sim words=2>>' }], stream: true });
  for await (const chunk of convertedBack) t.equal(chunk.model, 'test/claude', 'a chat client on a messages upstream, streamed');

  const count = await anthropic().messages.countTokens({ model: 'claude-opus-4-8', messages: [{ role: 'user', content: 'count me' }] });
  t.ok(count.input_tokens > 0, 'count_tokens');
  t.match(await anthropic().models.retrieve('claude-opus-4-8'), { id: 'test/claude', type: 'model' }, 'retrieve resolves an alias to its model');
  t.match(await openai().models.retrieve('gpt-latest'), { id: 'test/gpt', object: 'model' });
  await t.rejects(anthropic().messages.create({ model: 'claude-opus-4-9', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }), errorWith({ status: 404 }));
});

t.test('the dashboard\'s request page shows the alias a request asked for beside its model', async (t) => {
  const email = 'alias-viewer@example.com';
  const owner = await DashboardClient.signUp(gw.url, email);
  await gw.store.ledger.grant((await gw.store.accounts.byEmail(email))!.id, 1_000_000_000, 'test');
  const { secret } = await owner.createKey('k');
  const call = async (model: string) => {
    const { response } = await new Anthropic({ baseURL: gw.url, apiKey: secret, maxRetries: 0 })
      .messages.create({ model, max_tokens: 5, messages: [{ role: 'user', content: 'Hi <<sim words=1>>' }] })
      .withResponse();
    const id = response.headers.get('x-request-id')!;
    await gw.gateway.requestFinished(id);
    return (await owner.get(`/dashboard/requests/${id}`)).text;
  };
  t.match(await call('claude-opus-4-8'), /<dt>Model<\/dt><dd>test\/claude<span class="muted"> · asked as <code>claude-opus-4-8<\/code><\/span><\/dd>/);
  t.match(await call('test/claude'), /<dt>Model<\/dt><dd>test\/claude<\/dd>/, 'nothing more when asked by its id');
});

t.test('the shipped config serves Claude Code\'s own model ids with its output budgets and prompt size', async (t) => {
  const shipped = loadConfig(resolve(packageRoot(), 'config/gateway.yaml'), {});
  const cc = await startGateway({
    configure(cfg) {
      cfg.providers = shipped.providers;
      cfg.models = shipped.models;
      cfg.offers = shipped.offers;
    },
  });
  t.teardown(() => cc.close());
  const client = new Anthropic({ baseURL: cc.url, apiKey: cc.apiKey, maxRetries: 0 });
  // About 19k tokens of system prompt, as Claude Code sends (4 characters a token).
  const system = [{ type: 'text' as const, text: `You are a coding agent. ${'Follow the project conventions. '.repeat(2400)}`, cache_control: { type: 'ephemeral' as const } }];
  // Claude Code 2.1.197 asks sonnet (its default for API keys) and opus for 64000 tokens, haiku for 32000.
  for (const [model, max_tokens] of [['claude-sonnet-5', 64000], ['claude-opus-4-8', 64000], ['claude-haiku-4-5-20251001', 32000]] as const) {
    const stream = client.messages.stream({ model, max_tokens, system, messages: [{ role: 'user', content: 'List the files. <<sim words=5>>' }] });
    const msg = await stream.finalMessage();
    t.equal(msg.model, 'demo/claude-like', `${model} (max_tokens ${max_tokens}) is served by the demo model`);
    t.equal(msg.stop_reason, 'end_turn');
  }
  t.equal((await client.models.retrieve('claude-sonnet-5')).id, 'demo/claude-like');
});
