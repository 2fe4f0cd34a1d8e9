// Property test: random, mutated and broken bodies at a running gateway never get a 5xx, never
// crash or hang it, and every error comes back as a well-formed error body of the route's format.
import t from 'tap';
import fc from 'fast-check';
import http from 'node:http';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

type Route = 'chat' | 'messages' | 'count_tokens';
const PATHS: Record<Route, string> = {
  chat: '/v1/chat/completions',
  messages: '/v1/messages',
  count_tokens: '/v1/messages/count_tokens',
};
/** A request that takes longer than this counts as a hang. */
const HANG_MS = 10_000;
const RUNS = 700;

interface Sent {
  route: Route;
  body: string | Buffer;
  contentType?: string;
}
interface Received {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

let gw: TestGateway;
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
const statuses = new Map<number, number>();

t.before(async () => {
  gw = await startGateway({ creditUsd: 1_000_000 });
});
t.teardown(async () => {
  agent.destroy();
  await gw.close();
});

function send({ route, body, contentType }: Sent): Promise<Received> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${gw.apiKey}` };
    if (contentType !== undefined) headers['content-type'] = contentType;
    const req = http.request(
      `${gw.url}${PATHS[route]}`,
      { method: 'POST', headers, agent, signal: AbortSignal.timeout(HANG_MS) },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
        res.on('error', reject);
      },
    );
    req.on('error', (err) => reject(new Error(`${route} request failed (${err.message}): ${String(body).slice(0, 300)}`)));
    req.end(body);
  });
}

/** Throws (with the offending request) unless the response is a well-formed answer below 500. */
function assertWellFormed(sent: Sent, got: Received): void {
  statuses.set(got.status, (statuses.get(got.status) ?? 0) + 1);
  const fail = (why: string) => {
    throw new Error(`${why}\nstatus ${got.status} on ${sent.route}: ${got.text.slice(0, 500)}\nbody: ${String(sent.body).slice(0, 500)}`);
  };
  if (got.status >= 500) fail('a 5xx');
  if (!got.headers['x-request-id']) fail('no x-request-id');
  const type = got.headers['content-type'] ?? '';
  if (got.status !== 200) {
    const body = parseJson(got.text) ?? fail('an error body that is not JSON');
    const wellFormed =
      sent.route === 'chat'
        ? typeof body.error?.message === 'string' && body.error.message !== '' && typeof body.error.type === 'string' && 'param' in body.error && 'code' in body.error
        : body.type === 'error' && typeof body.error?.type === 'string' && typeof body.error?.message === 'string' && body.error.message !== '';
    if (!wellFormed) fail('a malformed error body');
  } else if (type.startsWith('text/event-stream')) {
    const datas = got.text.split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice(6));
    if (datas.some((d) => d !== '[DONE]' && parseJson(d) === undefined)) fail('a stream event that is not JSON');
    const ended = sent.route === 'chat' ? datas.at(-1) === '[DONE]' || /"error"/.test(datas.at(-1) ?? '') : /event: (message_stop|error)\n/.test(got.text);
    if (!ended) fail('a stream that did not end properly');
  } else if (typeof parseJson(got.text) !== 'object') fail('a success body that is not a JSON object');
}

function parseJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// --- Bodies that are mostly valid, so that mutations reach deep into the schemas ---

const text = fc.string({ maxLength: 30 });
const model = fc.constantFrom('test/gpt', 'test/claude', 'test/gpt', 'test/claude', 'no/such-model', '');
const cacheControl = fc.option(fc.record({ type: fc.constant('ephemeral'), ttl: fc.constantFrom('5m', '1h') }, { requiredKeys: ['type'] }));
const png = { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' };

const chatPart = fc.oneof(
  fc.record({ type: fc.constant('text'), text, cache_control: cacheControl }, { requiredKeys: ['type', 'text'] }),
  fc.record({
    type: fc.constant('image_url'),
    image_url: fc.record({ url: fc.constantFrom('https://example.com/a.png', 'data:image/png;base64,iVBORw0KGgo='), detail: fc.constantFrom('auto', 'low', 'high') }, { requiredKeys: ['url'] }),
  }),
);
const toolCall = fc.record({ id: fc.constantFrom('call_1', 'call_2'), type: fc.constant('function'), function: fc.record({ name: fc.constantFrom('f', 'g'), arguments: fc.constantFrom('{}', '{"a":1}', '') }) });
const chatMessage = fc.oneof(
  fc.record({ role: fc.constantFrom('system', 'developer'), content: fc.oneof(text, fc.array(chatPart.filter((p) => p.type === 'text'), { maxLength: 2 })) }),
  fc.record({ role: fc.constant('user'), content: fc.oneof(text, fc.array(chatPart, { maxLength: 3 })) }),
  fc.record({ role: fc.constant('assistant'), content: fc.option(text), tool_calls: fc.array(toolCall, { maxLength: 2 }), reasoning_content: fc.option(text) }, { requiredKeys: ['role'] }),
  fc.record({ role: fc.constant('tool'), tool_call_id: fc.constantFrom('call_1', 'call_2'), content: text }),
);
const chatTool = fc.record({ type: fc.constant('function'), function: fc.record({ name: fc.constantFrom('f', 'g'), description: text, parameters: fc.constant({ type: 'object', properties: { a: { type: 'number' } } }) }, { requiredKeys: ['name'] }) });
const chatBody = fc.record(
  {
    model,
    messages: fc.array(chatMessage, { minLength: 1, maxLength: 4 }),
    max_tokens: fc.integer({ min: 1, max: 64 }),
    max_completion_tokens: fc.integer({ min: 1, max: 64 }),
    temperature: fc.double({ min: 0, max: 2, noNaN: true }),
    top_p: fc.double({ min: 0, max: 1, noNaN: true }),
    stop: fc.oneof(text, fc.array(text, { maxLength: 2 }), fc.constant(null)),
    stream: fc.boolean(),
    stream_options: fc.record({ include_usage: fc.boolean() }),
    tools: fc.array(chatTool, { maxLength: 2 }),
    tool_choice: fc.oneof(fc.constantFrom('auto', 'none', 'required'), fc.constant({ type: 'function', function: { name: 'f' } })),
    parallel_tool_calls: fc.boolean(),
    response_format: fc.constantFrom({ type: 'text' }, { type: 'json_object' }, { type: 'json_schema', json_schema: { name: 'a', schema: { type: 'object' } } }),
    reasoning_effort: fc.constantFrom('none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'),
    user: text,
    n: fc.constant(1),
    modalities: fc.constant(['text']),
  },
  { requiredKeys: ['model', 'messages'] },
);

const block = fc.oneof(
  fc.record({ type: fc.constant('text'), text, cache_control: cacheControl }, { requiredKeys: ['type', 'text'] }),
  fc.record({ type: fc.constant('image'), source: fc.constantFrom(png, { type: 'url', url: 'https://example.com/a.png' }) }),
  fc.record({ type: fc.constant('tool_use'), id: fc.constantFrom('toolu_1', 'toolu_2'), name: fc.constantFrom('f', 'g'), input: fc.jsonValue({ maxDepth: 2 }) }),
  fc.record({ type: fc.constant('tool_result'), tool_use_id: fc.constantFrom('toolu_1', 'toolu_2'), content: fc.oneof(text, fc.constant([{ type: 'text', text: 'r' }])), is_error: fc.boolean() }, { requiredKeys: ['type', 'tool_use_id'] }),
  fc.record({ type: fc.constant('thinking'), thinking: text, signature: text }),
  fc.record({ type: fc.constant('redacted_thinking'), data: text }),
);
const messagesMessage = fc.oneof(
  fc.record({ role: fc.constantFrom('user', 'assistant'), content: fc.oneof(text, fc.array(block, { minLength: 1, maxLength: 3 })) }),
  fc.record({ role: fc.constant('system'), content: text, clear_at: fc.constantFrom('never', 'next_user_message'), output_config: fc.record({ effort: fc.constantFrom('low', 'high', 'max') }) }, { requiredKeys: ['role', 'content'] }),
);
const messagesBody = fc.record(
  {
    model,
    max_tokens: fc.integer({ min: 1, max: 64 }),
    messages: fc.array(messagesMessage, { minLength: 1, maxLength: 4 }),
    system: fc.oneof(text, fc.array(fc.record({ type: fc.constant('text'), text, cache_control: cacheControl }, { requiredKeys: ['type', 'text'] }), { maxLength: 2 })),
    temperature: fc.double({ min: 0, max: 1, noNaN: true }),
    top_p: fc.double({ min: 0, max: 1, noNaN: true }),
    top_k: fc.integer({ min: 0, max: 500 }),
    stop_sequences: fc.array(text, { maxLength: 2 }),
    stream: fc.boolean(),
    tools: fc.array(fc.record({ name: fc.constantFrom('f', 'g'), description: text, input_schema: fc.constant({ type: 'object' }) }, { requiredKeys: ['name'] }), { maxLength: 2 }),
    tool_choice: fc.constantFrom({ type: 'auto' }, { type: 'any' }, { type: 'tool', name: 'f' }),
    thinking: fc.constantFrom({ type: 'disabled' }, { type: 'enabled', budget_tokens: 1024 }),
    metadata: fc.record({ user_id: text }),
  },
  { requiredKeys: ['model', 'max_tokens', 'messages'] },
);

// --- Mutations ---

/** Every place in a JSON value, as a list of keys from the root. */
function places(value: unknown, at: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(at);
  if (Array.isArray(value)) value.forEach((v, i) => places(v, [...at, i], out));
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) places(v, [...at, k], out);
  return out;
}

type Generated<A> = A extends fc.Arbitrary<infer T> ? T : never;

const mutation = fc.record({
  pick: fc.nat(),
  kind: fc.constantFrom('replace', 'delete', 'add'),
  key: fc.oneof(fc.constantFrom('type', 'role', 'content', 'text', 'n', 'logprobs', 'audio', '__proto__', 'max_tokens'), fc.string({ maxLength: 8 })),
  value: fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constantFrom(0, -1, 1.5, 2 ** 53, 1e308, '', null, [], {}, true)),
});

function mutate(body: unknown, steps: Generated<typeof mutation>[]): unknown {
  const root = structuredClone(body) as any;
  for (const step of steps) {
    const all = places(root);
    const path = all[step.pick % all.length];
    if (path.length === 0) continue;
    const parent = path.slice(0, -1).reduce((node, key) => node[key], root);
    const last = path[path.length - 1];
    // Copies: fast-check may hand the same value to several steps, and a step may land inside a value
    // an earlier step inserted, which would make the body cyclic (not JSON at all).
    if (step.kind === 'replace') parent[last] = structuredClone(step.value);
    else if (step.kind === 'delete') {
      if (Array.isArray(parent)) parent.splice(last as number, 1);
      else delete parent[last];
    } else {
      const target = parent[last];
      if (target !== null && typeof target === 'object' && !Array.isArray(target)) {
        Object.defineProperty(target, step.key, { value: structuredClone(step.value), enumerable: true, writable: true, configurable: true });
      }
    }
  }
  return root;
}

/** Text-level damage: insert, delete or cut off at a position. */
const textDamage = fc.record({ at: fc.nat(), kind: fc.constantFrom('insert', 'delete', 'truncate'), insert: fc.constantFrom('{', '}', '[', ']', ',', ':', '"', '\\', '\u0000', 'x', '\ud800', ' ') });
function damage(text: string, d: Generated<typeof textDamage>): string {
  const i = d.at % (text.length + 1);
  if (d.kind === 'insert') return text.slice(0, i) + d.insert + text.slice(i);
  if (d.kind === 'delete') return text.slice(0, i) + text.slice(i + 1);
  return text.slice(0, i);
}

const contentType = fc.oneof(
  { weight: 12, arbitrary: fc.constant('application/json') },
  { weight: 2, arbitrary: fc.constant('application/json; charset=utf-8') },
  { weight: 1, arbitrary: fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'application/jsonx', '') },
  { weight: 1, arbitrary: fc.constant(undefined) },
);
const chatRoute = fc.constant<Route>('chat');
const messagesRoute = fc.constantFrom<Route>('messages', 'messages', 'count_tokens');
const validish = fc.oneof(
  fc.record({ route: chatRoute, value: chatBody as fc.Arbitrary<unknown> }),
  fc.record({ route: messagesRoute, value: messagesBody as fc.Arbitrary<unknown> }),
);

async function check(sent: Sent): Promise<void> {
  assertWellFormed(sent, await send(sent));
}

const params = { numRuns: RUNS, endOnFailure: true };

t.test('valid-looking bodies', async (t) => {
  await fc.assert(
    fc.asyncProperty(validish, contentType, ({ route, value }, type) => check({ route, body: JSON.stringify(value), contentType: type })),
    params,
  );
  t.pass(`${RUNS} requests`);
});

t.test('mutated bodies', async (t) => {
  await fc.assert(
    fc.asyncProperty(validish, fc.array(mutation, { minLength: 1, maxLength: 4 }), ({ route, value }, steps) =>
      check({ route, body: JSON.stringify(mutate(value, steps)), contentType: 'application/json' }),
    ),
    { ...params, numRuns: RUNS * 2 },
  );
  t.pass(`${RUNS * 2} requests`);
});

t.test('damaged JSON text', async (t) => {
  await fc.assert(
    fc.asyncProperty(validish, textDamage, ({ route, value }, d) => check({ route, body: damage(JSON.stringify(value), d), contentType: 'application/json' })),
    params,
  );
  t.pass(`${RUNS} requests`);
});

t.test('random JSON values, strings and bytes', async (t) => {
  const route = fc.constantFrom<Route>('chat', 'messages', 'count_tokens');
  const body = fc.oneof(
    fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v) ?? ''),
    fc.dictionary(fc.constantFrom('model', 'messages', 'max_tokens', 'stream', 'tools', 'system', 'n'), fc.jsonValue({ maxDepth: 3 })).map((v) => JSON.stringify(v)),
    fc.string({ maxLength: 60 }),
    fc.uint8Array({ maxLength: 60 }).map((bytes) => Buffer.from(bytes)),
  );
  await fc.assert(fc.asyncProperty(route, body, contentType, (r, b, type) => check({ route: r, body: b, contentType: type })), params);
  t.pass(`${RUNS} requests`);
});

t.test('hand-picked nasty bodies', async (t) => {
  const valid = { model: 'test/gpt', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] };
  const nest = (n: number) => '['.repeat(n) + ']'.repeat(n);
  const bodies: string[] = [
    `{"model":"test/gpt","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"extra":${nest(100_000)}}`,
    `{"model":"test/gpt","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"__proto__":{"polluted":true},"constructor":{"prototype":{}}}`,
    JSON.stringify({ ...valid, max_tokens: 1e308 }),
    '{"model":"test/gpt","max_tokens":1e400,"messages":[{"role":"user","content":"hi"}]}',
    JSON.stringify({ ...valid, messages: [{ role: 'user', content: '\ud800\u0000\uffff' }] }),
    JSON.stringify({ ...valid, messages: Array.from({ length: 5000 }, () => ({ role: 'user', content: 7 })) }),
    JSON.stringify({ ...valid, messages: Array.from({ length: 100_000 }, () => 7) }),
    JSON.stringify({ ...valid, messages: [{ role: 'user', content: 'lorem ipsum '.repeat(50_000) }] }),
  ];
  for (const route of ['chat', 'messages', 'count_tokens'] as Route[]) {
    for (const body of bodies) await check({ route, body, contentType: 'application/json' });
  }
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'no prototype pollution');
  t.pass(`${bodies.length * 3} requests`);
});

t.test('long text without spaces does not hang the gateway', async (t) => {
  // BPE is quadratic on unbroken runs: a 2 MB one took minutes before runs were counted by length.
  const started = performance.now();
  const body = JSON.stringify({ model: 'test/gpt', max_tokens: 8, messages: [{ role: 'user', content: 'x'.repeat(2_000_000) }] });
  await check({ route: 'count_tokens', body, contentType: 'application/json' });
  t.ok(performance.now() - started < 10_000, 'answered (hang check, not a speed target)');
});

t.test('the gateway still serves after all that, and the runs were not degenerate', async (t) => {
  const got = await send({ route: 'chat', body: JSON.stringify({ model: 'test/gpt', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }), contentType: 'application/json' });
  t.equal(got.status, 200);
  t.ok((statuses.get(200) ?? 0) > RUNS / 10, `enough successes: ${JSON.stringify([...statuses])}`);
  t.ok((statuses.get(400) ?? 0) > RUNS, 'plenty of 400s');
  t.ok((statuses.get(415) ?? 0) > 0, 'some 415s');
});
