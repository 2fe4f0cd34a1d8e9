// parseConfig / loadConfig: YAML and JSON, ${ENV} substitution, every schema error named by its
// path, cross-reference errors, defaults filled in; the shipped config/gateway.yaml loads.
import t, { type Test } from 'tap';
import { join, resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { ConfigError, configPath, loadConfig, parseConfig } from '../../lib/config.js';
import { resolveOffers } from '../../lib/offers.js';
import { packageRoot } from '../../lib/package-root.js';

/** A minimal valid config object; tests change copies of it. */
const minimal = () => ({
  providers: [{ id: 'p', format: 'messages', base_url: 'https://api.example.com' }],
  models: [{ id: 'm/a', context_window: 1000, max_output_tokens: 100 }],
  offers: [{ listing: 'm/a@p', model: 'm/a', provider: 'p', upstream_model: 'up', price: { input: 1, output: 2 } }],
});

/** The problems of a config that must be refused. */
function problemsOf(t: Test, text: string, source = 'c.json', env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseConfig(text, source, env);
  } catch (e) {
    if (e instanceof ConfigError) {
      t.equal(e.source, source, 'the error names the file');
      t.match(e.message, source);
      for (const p of e.problems) t.ok(e.message.includes(p), `message lists "${p}"`);
      return e.problems;
    }
    throw e;
  }
  t.fail('the config was accepted');
  return [];
}

const json = (o: unknown) => JSON.stringify(o);

t.test('the shipped config/gateway.yaml loads and resolves', async (t) => {
  const path = resolve(packageRoot(), 'config/gateway.yaml');
  const cfg = loadConfig(path, {});
  t.equal(cfg.source, path);
  t.ok(cfg.providers.length > 0 && cfg.models.length > 0 && cfg.offers.length > 0);
  const byModel = resolveOffers(cfg, 'http://127.0.0.1:1');
  for (const m of cfg.models) t.ok(byModel.get(m.id)!.length > 0, `model ${m.id} has offers`);
});

t.test('YAML and JSON give the same config', async (t) => {
  const yaml = `
providers:
  - id: p
    format: messages
    base_url: https://api.example.com   # a comment
models:
  - { id: m/a, context_window: 1000, max_output_tokens: 100 }
offers:
  - listing: m/a@p
    model: m/a
    provider: p
    upstream_model: up
    price: { input: 1, output: 2 }
`;
  const a = parseConfig(yaml, 'gateway.yaml', {});
  const b = parseConfig(json(minimal()), 'gateway.json', {});
  const strip = ({ source: _s, ...rest }: any) => rest;
  t.same(strip(a), strip(b));
  t.equal(a.source, 'gateway.yaml');
  t.equal(b.source, 'gateway.json');
});

t.test('the format follows the file name: .json is parsed as JSON, anything else as YAML', async (t) => {
  t.match(problemsOf(t, 'providers: [', 'x.yaml'), [/^not valid YAML: /]);
  t.match(problemsOf(t, '{"providers": [', 'x.JSON'), [/^not valid JSON: /]);
  t.match(problemsOf(t, '- a\n- b\n', 'x.yml'), ['the config must be a mapping (object)']);
  t.match(problemsOf(t, '', 'x.yml'), ['the config must be a mapping (object)'], 'an empty file');
});

t.test('defaults are filled in', async (t) => {
  const cfg = parseConfig(json(minimal()), 'c.json', {});
  t.same(cfg.server, {
    host: '127.0.0.1',
    port: 8080,
    body_limit_bytes: 10_485_760,
    max_buffered_bytes: 268_435_456,
    headers_timeout_ms: 10_000,
    request_timeout_ms: 30_000,
    keep_alive_timeout_ms: 65_000,
    shutdown_grace_ms: 30_000,
  });
  t.same(cfg.storage, { sqlite: './data/gateway.db', commit_interval_ms: 20, node_dead_after_ms: 10_000 });
  t.same(cfg.upstream, { first_byte_timeout_ms: 30_000, idle_timeout_ms: 120_000, commit_timeout_ms: 2000, max_request_ms: 3_600_000, max_sockets_per_provider: 256 });
  t.same(cfg.breaker, { failure_threshold: 5, cooldown_ms: 30_000 });
  t.same(cfg.plugins, ['auth', 'schema-check', 'offer-pick', 'rate-limit', 'budget-hold', 'format-transform', 'metering']);
  t.same(cfg.rate_limits, { requests_per_minute: 600, tokens_per_minute: 2_000_000 });
  t.same(cfg.demo, { enabled: false, email: 'demo@example.com', credit_usd: 5 });
  const { betas, ...provider } = cfg.providers[0];
  t.same(provider, { id: 'p', format: 'messages', base_url: 'https://api.example.com', http2: false, simulated: false, anthropic_version: '2023-06-01' });
  t.ok(betas!.includes('claude-code') && betas!.includes('prompt-caching'), 'the default beta list');
  t.same(cfg.offers[0].allow, { fields: [], tools: [], betas: [] });
  t.equal(cfg.offers[0].subscription, false);
  t.same(cfg.offers[0].supports, { tools: true, images: true, reasoning: true, json_schema: true, documents: true });
});

t.test('given values win over defaults, partly given sections are completed', async (t) => {
  const c: any = minimal();
  c.server = { port: 0 };
  c.offers[0].supports = { images: false };
  c.plugins = ['offer-pick'];
  const cfg = parseConfig(json(c), 'c.json', {});
  t.equal(cfg.server.port, 0);
  t.equal(cfg.server.host, '127.0.0.1');
  t.same(cfg.offers[0].supports, { tools: true, images: false, reasoning: true, json_schema: true, documents: true });
  t.same(cfg.plugins, ['offer-pick']);
});

t.test('storage: sqlite or postgres (with ${NAME}), exactly one', async (t) => {
  const c: any = minimal();
  c.storage = { postgres: 'postgres://gw:${PGPASSWORD}@db.internal:5432/gateway' };
  t.same(parseConfig(json(c), 'c.json', { PGPASSWORD: 's3cret' }).storage,
    { postgres: 'postgres://gw:s3cret@db.internal:5432/gateway', commit_interval_ms: 100, node_dead_after_ms: 10_000 }, 'no sqlite default beside postgres; a longer commit interval');
  c.storage = { sqlite: 'x.db', postgres: 'postgres://127.0.0.1/gateway' };
  t.same(problemsOf(t, json(c)), ['storage: set either sqlite (one node) or postgres (any number of nodes), not both']);
  c.storage = { postgres: 'mysql://127.0.0.1/gateway' };
  t.match(problemsOf(t, json(c)), [/^storage\.postgres: must match pattern/]);
  c.storage = { postgres: 'postgres://127.0.0.1/gateway', node_dead_after_ms: 500 };
  t.match(problemsOf(t, json(c)), [/^storage\.node_dead_after_ms: must be >= 2000/], 'a failure bound shorter than a few heartbeats is refused');
});

t.test('${NAME} is replaced from the environment', async (t) => {
  const yaml = `
server: { port: \${PORT} }
providers:
  - id: p
    format: chat
    base_url: \${BASE}/v1
    api_key: \${OPENAI_API_KEY}
models: [{ id: m/a, context_window: 1000, max_output_tokens: 100 }]
offers: [{ listing: l, model: m/a, provider: p, upstream_model: u, price: { input: 1, output: 2 } }]
`;
  const cfg = parseConfig(yaml, 'g.yaml', { PORT: '9090', BASE: 'https://chat.example.com', OPENAI_API_KEY: 'sk-test-123' });
  t.equal(cfg.server.port, 9090, 'a number stays a number');
  t.equal(cfg.providers[0].base_url, 'https://chat.example.com/v1', 'inside a longer value');
  t.equal(cfg.providers[0].api_key, 'sk-test-123');
  t.equal(parseConfig(yaml.replace('${OPENAI_API_KEY}', '"${EMPTY}"'), 'g.yaml', { PORT: '1', BASE: 'http://x', EMPTY: '' }).providers[0].api_key, '', 'a set but empty variable is fine');
  const c: any = minimal();
  c.providers[0].api_key = '${KEY}';
  t.equal(parseConfig(json(c), 'c.json', { KEY: 'k' }).providers[0].api_key, 'k', 'JSON too');
  t.equal(parseConfig(json(c).replace('${KEY}', '$KEY'), 'c.json', {}).providers[0].api_key, '$KEY', 'only the braced form is substituted');
});

t.test('an unset variable is an error naming it, together with the other problems', async (t) => {
  const c: any = minimal();
  c.providers[0].api_key = '${MISSING_KEY}';
  c.providers[0].base_url = '${MISSING_URL}';
  const problems = problemsOf(t, json(c), 'c.json', { OTHER: 'x' });
  t.ok(problems.includes('environment variable MISSING_KEY is not set (used as ${MISSING_KEY})'), 'names MISSING_KEY');
  t.ok(problems.includes('environment variable MISSING_URL is not set (used as ${MISSING_URL})'), 'names MISSING_URL');
  t.ok(problems.some((p) => p.startsWith('providers[0].base_url: ')), 'and the empty base_url it left behind');
});

t.test('a ${NAME} in a YAML comment needs no environment variable', async (t) => {
  // An operator comments out a provider block; its ${OPENAI_API_KEY} must not stop the gateway.
  const yaml = `
providers:
  - id: p
    format: messages
    base_url: https://api.example.com
#  - id: openai
#    format: chat
#    api_key: \${OPENAI_API_KEY}
models: [{ id: m/a, context_window: 1000, max_output_tokens: 100 }]
offers: [{ listing: l, model: m/a, provider: p, upstream_model: u, price: { input: 1, output: 2 } }]
`;
  t.doesNotThrow(() => parseConfig(yaml, 'g.yaml', {}));
});

t.test('every schema error is named by its path', async (t) => {
  const c: any = minimal();
  c.serverr = {};
  c.providers.push({ id: 'q', format: 'grpc' });
  c.models[0].context_window = 0;
  c.offers.push({ listing: 'l2', model: 'm/a', provider: 'p', upstream_model: 'u', price: { input: -1, output: 'x', extra: 1 }, bogus: 2 });
  c.offers.push({ listing: 'l3', model: 'm/a', provider: 'p', price: { input: 0.0001, output: 1 } });
  c.upstream = { first_byte_timeout_ms: 1.5 };
  c.plugins = ['auth', 'nope'];
  const problems = problemsOf(t, json(c));
  for (const expected of [
    '(top level): unknown field "serverr"',
    'providers[1]: missing required field "base_url"',
    'providers[1].format: must be one of "chat", "messages"',
    'models[0].context_window: must be >= 1',
    'offers[1]: unknown field "bogus"',
    'offers[1].price: unknown field "extra"',
    'offers[1].price.input: must be >= 0',
    'offers[1].price.output: must be number',
    'offers[2]: missing required field "upstream_model"',
    'offers[2].price.input: must be multiple of 0.001',
    'upstream.first_byte_timeout_ms: must be integer',
  ]) {
    t.ok(problems.includes(expected), expected);
  }
  t.ok(problems.some((p) => p.startsWith('plugins[1]: must be one of "auth"')), 'plugins[1] names the allowed plugins');
});

t.test('a price with 3 decimals is accepted (multipleOf precision)', async (t) => {
  const c: any = minimal();
  c.offers[0].price = { input: 3.438, output: 0.001, cache_read: 0.275, cache_write: 1000000 };
  t.doesNotThrow(() => parseConfig(json(c), 'c.json', {}));
});

t.test('required sections', async (t) => {
  const problems = problemsOf(t, json({}));
  t.same(problems, [
    '(top level): missing required field "providers"',
    '(top level): missing required field "models"',
    '(top level): missing required field "offers"',
  ]);
});

t.test('a simulated provider needs no base_url', async (t) => {
  const c: any = minimal();
  c.providers[0] = { id: 'p', format: 'messages', simulated: true };
  t.equal(parseConfig(json(c), 'c.json', {}).providers[0].simulated, true);
});

t.test('cross-reference errors', async (t) => {
  const c: any = minimal();
  c.providers.push({ id: 'p', format: 'chat', base_url: 'https://x' });
  c.models.push({ id: 'm/a', context_window: 10, max_output_tokens: 5 }, { id: 'm/big', context_window: 100, max_output_tokens: 101 });
  c.offers.push(
    { listing: 'm/a@p', model: 'm/a', provider: 'p', upstream_model: 'u', price: { input: 1, output: 2 } },
    { listing: 'x', model: 'm/unknown', provider: 'nobody', upstream_model: 'u', price: { input: 1, output: 2 } },
  );
  t.same(problemsOf(t, json(c)).sort(), [
    'models[1].id: duplicate "m/a"',
    'models[2].max_output_tokens: larger than its context_window (100)',
    'offers[1].listing: duplicate "m/a@p"',
    'offers[2].model: no model with id "m/unknown"',
    'offers[2].provider: no provider with id "nobody"',
    'providers[1].id: duplicate "p"',
  ]);
});

t.test('model aliases: other ids of a model, each naming one model', async (t) => {
  const c: any = minimal();
  c.models[0].aliases = ['vendor-a', 'vendor-a-2025'];
  c.models.push({ id: 'm/b', context_window: 1000, max_output_tokens: 100, aliases: ['vendor-b'] });
  t.same(parseConfig(json(c), 'c.json', {}).models.map((m) => m.aliases), [['vendor-a', 'vendor-a-2025'], ['vendor-b']]);
  c.models[0].aliases.push('m/a', 'm/b', 'vendor-b', 'vendor-a');
  t.same(problemsOf(t, json(c)), [
    'models[0].aliases[2]: "m/a" is this model\'s own id',
    'models[0].aliases[3]: "m/b" is the id of models[1]; an alias must name one model',
    'models[0].aliases[5]: "vendor-a" is already an alias (models[0].aliases[0]); an alias must name one model',
    'models[1].aliases[0]: "vendor-b" is already an alias (models[0].aliases[4]); an alias must name one model',
  ]);
  c.models[0].aliases = [''];
  t.match(problemsOf(t, json(c)), [/^models\[0\]\.aliases\[0\]: must NOT have fewer than 1 characters/]);
});

t.test('the shipped config answers to the model ids Claude Code asks for', async (t) => {
  const cfg = loadConfig(resolve(packageRoot(), 'config/gateway.yaml'), {});
  const claudeLike = cfg.models.find((m) => m.id === 'demo/claude-like')!;
  // Claude Code 2.1.197's picks with a custom ANTHROPIC_BASE_URL: sonnet (the default), opus, haiku (dated), fable.
  for (const id of ['claude-sonnet-5', 'claude-opus-4-8', 'claude-haiku-4-5-20251001', 'claude-fable-5', 'claude-sonnet-4-5', 'claude-haiku-4-5'])
    t.ok(claudeLike.aliases!.includes(id), id);
});

t.test('an offer listing is printable ASCII without spaces: it is sent in the x-service-listing header', async (t) => {
  for (const listing of ['m/a@prov ider', 'm/a@prövider', 'm/a@p\n', '']) {
    const c: any = minimal();
    c.offers[0].listing = listing;
    t.match(problemsOf(t, json(c)), [/^offers\[0\]\.listing: must match pattern/], JSON.stringify(listing));
  }
  const c: any = minimal();
  c.offers[0].listing = 'acme/big-1.5@provider:eu_west~2';
  t.doesNotThrow(() => parseConfig(json(c), 'c.json', {}), 'any printable character');
});

t.test('billing plugins come together: budget-hold, metering and auth', async (t) => {
  const withPlugins = (plugins: string[]) => ({ ...minimal(), plugins });
  const base = ['schema-check', 'offer-pick', 'format-transform'];
  t.same(problemsOf(t, json(withPlugins(['auth', ...base, 'budget-hold']))), [
    'plugins: budget-hold without metering: holds would never be settled, so requests would be free',
  ]);
  t.same(problemsOf(t, json(withPlugins(['auth', ...base, 'metering']))), [
    'plugins: metering without budget-hold: there would be no hold to settle, so requests would be free',
  ]);
  t.same(problemsOf(t, json(withPlugins([...base, 'budget-hold', 'metering']))), [
    'plugins: budget-hold and metering without auth: no account to charge, so requests would be free',
  ]);
  t.same(problemsOf(t, json(withPlugins([...base, 'metering']))), [
    'plugins: metering without budget-hold: there would be no hold to settle, so requests would be free',
    'plugins: metering without auth: no account to charge, so requests would be free',
  ]);
  for (const ok of [base, ['auth', ...base], ['auth', ...base, 'budget-hold', 'metering']])
    t.doesNotThrow(() => parseConfig(json(withPlugins(ok)), 'c.json', {}), ok.join(', '));
});

t.test('loadConfig: a missing file is a ConfigError naming it', async (t) => {
  const path = resolve(t.testdirName, 'absent.yaml');
  t.throws(() => loadConfig(path, {}), { name: 'ConfigError', source: path, message: /cannot read the file/ });
});

t.test('configPath: explicit, then GATEWAY_CONFIG, then the default', async (t) => {
  t.equal(configPath('/etc/gw.yaml', { GATEWAY_CONFIG: '/x.yaml' }), '/etc/gw.yaml');
  t.equal(configPath(undefined, { GATEWAY_CONFIG: '/x.yaml' }), '/x.yaml');
  t.equal(configPath(undefined, {}), resolve('config/gateway.yaml'));
});

t.test('the plugin order is checked: each step needs what the one before it sets', async (t) => {
  const yaml = readFileSync(join(import.meta.dirname, '../../config/gateway.yaml'), 'utf8');
  const withPlugins = (list: string[]) => `${yaml}\nplugins: [${list.join(', ')}]\n`;
  t.throws(() => parseConfig(withPlugins(['auth', 'schema-check', 'budget-hold', 'offer-pick', 'format-transform', 'metering']), 'g.yaml'), /must run in this order/);
  t.throws(() => parseConfig(withPlugins(['auth', 'schema-check', 'offer-pick', 'budget-hold', 'metering', 'format-transform']), 'g.yaml'), /metering must come after format-transform/);
  t.ok(parseConfig(withPlugins(['schema-check', 'offer-pick', 'format-transform']), 'g.yaml'), 'billing off is fine');
  // rate-limit: after the token estimate (offer-pick), before any credit is held (budget-hold).
  t.throws(() => parseConfig(withPlugins(['auth', 'schema-check', 'rate-limit', 'offer-pick', 'budget-hold', 'format-transform', 'metering']), 'g.yaml'), /must run in this order/);
  t.throws(() => parseConfig(withPlugins(['auth', 'schema-check', 'offer-pick', 'budget-hold', 'rate-limit', 'format-transform', 'metering']), 'g.yaml'), /must run in this order/);
  t.throws(() => parseConfig(withPlugins(['schema-check', 'offer-pick', 'rate-limit', 'format-transform']), 'g.yaml'), /rate-limit without auth: there would be no key to limit/);
  t.ok(parseConfig(withPlugins(['auth', 'schema-check', 'offer-pick', 'rate-limit', 'format-transform']), 'g.yaml'), 'rate limits without billing');
});

t.test('rate_limits: given values win, each must be a positive integer', async (t) => {
  const c: any = minimal();
  c.rate_limits = { requests_per_minute: 60 };
  t.same(parseConfig(json(c), 'c.json', {}).rate_limits, { requests_per_minute: 60, tokens_per_minute: 2_000_000 });
  c.rate_limits = { requests_per_minute: 0, tokens_per_minute: 1.5, burst: 3 };
  t.same(problemsOf(t, json(c)).sort(), [
    'rate_limits.requests_per_minute: must be >= 1',
    'rate_limits.tokens_per_minute: must be integer',
    'rate_limits: unknown field "burst"',
  ]);
});

t.test('log and tracing: defaults, given values, refused values', async (t) => {
  const c: any = minimal();
  const d = parseConfig(json(c), 'c.json', {});
  t.same(d.log, { level: 'info', requests: true }, 'format absent: chosen by the output (pretty on a terminal)');
  t.equal(d.tracing, undefined, 'tracing off unless configured');
  c.log = { level: 'debug', format: 'pretty', requests: false };
  c.tracing = { otlp_endpoint: 'http://127.0.0.1:4318' };
  const g = parseConfig(json(c), 'c.json', {});
  t.same(g.log, { level: 'debug', format: 'pretty', requests: false });
  t.same(g.tracing, { otlp_endpoint: 'http://127.0.0.1:4318', service_name: 'llm-gateway' });
  c.log = { level: 'verbose', format: 'xml' };
  c.tracing = { otlp_endpoint: 'grpc://collector:4317' };
  t.same(problemsOf(t, json(c)).sort(), [
    'log.format: must be one of "json", "pretty"',
    'log.level: must be one of "debug", "info", "warn", "error"',
    'tracing.otlp_endpoint: must match pattern "^https?://"',
  ]);
  c.log = {};
  c.tracing = {};
  t.same(problemsOf(t, json(c)), ['tracing: missing required field "otlp_endpoint"']);
});

t.test('config/production.example.yaml is valid once its secrets are in the environment', async (t) => {
  const env = { ANTHROPIC_API_KEY: 'a', OPENAI_API_KEY: 'b', STRIPE_SECRET_KEY: 'c', STRIPE_WEBHOOK_SECRET: 'd' };
  const cfg = loadConfig(join(packageRoot(), 'config/production.example.yaml'), env);
  t.equal(cfg.demo.enabled, false, 'no demo account in production');
  t.equal(cfg.providers[0].api_key, 'a');
  t.throws(() => loadConfig(join(packageRoot(), 'config/production.example.yaml'), {}), /ANTHROPIC_API_KEY is not set/);
});

t.test('metrics: absent is off; present needs a port, gets the loopback host and no key labels by default', async (t) => {
  t.equal(parseConfig(json(minimal()), 'c.json', {}).metrics, undefined);
  t.same(parseConfig(json({ ...minimal(), metrics: { port: 9464 } }), 'c.json', {}).metrics, { host: '127.0.0.1', port: 9464, key_labels: false });
  t.same(problemsOf(t, json({ ...minimal(), metrics: { host: '0.0.0.0' } })), ['metrics: missing required field "port"']);
  t.same(problemsOf(t, json({ ...minimal(), metrics: { port: 9464, path: '/m' } })), ['metrics: unknown field "path"']);
});
