// The plugin around the schemas: Content-Type, JSON parsing, ctx.body / ctx.stream, error summaries.
import t from 'tap';
import { fakeCtx, check, plugin } from './fake-ctx.js';
import { createBodyValidator, type ValidationProblem } from '../../../plugins/schema-check/index.js';
import { MAX_DEPTH, MAX_VALUES_FOR_ALL_PROBLEMS } from '../../../plugins/schema-check/validate.js';

const chatBody = { model: 'm', messages: [{ role: 'user', content: 'Hi' }] };

t.test('name', async (t) => {
  t.equal(plugin.name, 'schema-check');
});

t.test('Content-Type must be application/json, parameters allowed', async (t) => {
  for (const type of ['application/json', 'application/json; charset=utf-8', 'Application/JSON;charset=UTF-8', ' application/json ']) {
    t.equal(await check(fakeCtx('chat', chatBody, type)), undefined, `accepts ${JSON.stringify(type)}`);
  }
  for (const type of [null, 'text/plain', 'application/jsonl', 'application/json-patch+json', 'application/x-www-form-urlencoded', '']) {
    const err = await check(fakeCtx('messages', chatBody, type));
    t.match(
      err,
      { status: 415, type: 'invalid_request_error', code: 'unsupported_media_type', message: /^Content-Type must be application\/json/ },
      `rejects ${JSON.stringify(type)}`,
    );
  }
  t.match((await check(fakeCtx('chat', chatBody, null)))?.message, /none was sent/);
  t.match((await check(fakeCtx('chat', chatBody, 'text/plain')))?.message, /got "text\/plain"/);
});

t.test('malformed JSON: 400 naming the position', async (t) => {
  const cases: [string, RegExp][] = [
    ['{"model": "m",}', /line 1, column 15 \(offset 14\): unexpected "}"; expected a property name/],
    ['{\n  "model": "m"\n  "messages": []\n}', /line 3, column 3 \(offset 19\): unexpected "\\""; expected "," or "}"/],
    ['{"model": "m"', /line 1, column 14 .*unexpected end of input/],
    ['{"model": "m"} trailing', /column 16 .*expected the end of the body/],
    ["{'model': 'm'}", /column 2 .*expected a property name in double quotes/],
  ];
  for (const [text, position] of cases) {
    const err = await check(fakeCtx('chat', text));
    t.match(err, { status: 400, type: 'invalid_request_error', code: 'invalid_json', param: null }, JSON.stringify(text));
    t.match(err?.message, /^The request body is not valid JSON: at /);
    t.match(err?.message, position);
  }
  t.match(await check(fakeCtx('chat', '')), { status: 400, code: 'invalid_json', message: /body is empty/ });
  t.match(await check(fakeCtx('chat', '  \n')), { status: 400, code: 'invalid_json', message: /body is empty/ });
});

t.test('a body that is not an object: 400', async (t) => {
  for (const [text, got] of [['[]', 'an array'], ['"x"', 'a string'], ['42', 'a number'], ['null', 'null'], ['true', 'a boolean']]) {
    t.match(
      await check(fakeCtx('messages', text)),
      { status: 400, type: 'invalid_request_error', code: 'invalid_body', message: `The request body must be a JSON object (got ${got}).` },
      text,
    );
  }
});

t.test('a valid body is parsed once into ctx.body; ctx.stream follows `stream`', async (t) => {
  const ctx = fakeCtx('chat', { ...chatBody, stream: true });
  t.equal(await check(ctx), undefined);
  t.same(ctx.body, { ...chatBody, stream: true });
  t.equal(ctx.stream, true);

  for (const stream of [false, undefined]) {
    const other = fakeCtx('messages', { ...chatBody, max_tokens: 5, stream });
    await check(other);
    t.equal(other.stream, false, `stream ${stream}`);
  }
  const counting = fakeCtx('count_tokens', { ...chatBody, stream: true });
  t.equal(await check(counting), undefined);
  t.equal(counting.stream, false, 'count_tokens never streams');
});

t.test('a rejected body leaves in ctx.body only the model it asked for (for its history row and log line)', async (t) => {
  const ctx = fakeCtx('chat', { model: 'm', temperature: 'hot', messages: 'not a list' });
  t.ok(await check(ctx));
  t.same(ctx.body, { model: 'm' });
  const noModel = fakeCtx('chat', { model: 42 });
  t.ok(await check(noModel));
  t.same(noModel.body, {}, 'a model that is not a string is not kept');
});

t.test('GET models: nothing is checked', async (t) => {
  const ctx = fakeCtx('models', Buffer.alloc(0), null);
  t.equal(await check(ctx), undefined);
  t.same(ctx.body, {});
  t.equal(ctx.stream, false);
});

t.test('all problems of a body at once, the first one named', async (t) => {
  const err = await check(
    fakeCtx('chat', {
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: '' } }] }],
      temperature: 9,
      n: 3,
    }),
  );
  t.equal(err?.param, 'messages[0].content[0].image_url.url');
  t.equal(
    err?.message,
    'messages[0].content[0].image_url.url: must be a non-empty string (and 2 more problems: ' +
      'temperature: must be at most 2 (got 9); n: must be 1 (got 3): only one choice per request is supported).',
  );
  const problems = err?.cause as ValidationProblem[];
  t.same(
    problems.map((p) => p.path),
    ['messages[0].content[0].image_url.url', 'temperature', 'n'],
    'every problem is kept as the cause',
  );
});

t.test('a long list of problems is cut short in the message, not in the cause', async (t) => {
  const messages = Array.from({ length: 10 }, () => ({ role: 'user', content: 5 }));
  const err = await check(fakeCtx('chat', { model: 'm', messages }));
  t.match(err?.message, /^messages\[0\]\.content: must be a string, an array or null \(got an integer\) \(and 9 more problems: messages\[1\]\.content: .*messages\[4\]\.content: [^;]*; and 5 more\)\.$/);
  t.equal((err?.cause as ValidationProblem[]).length, 10);
});

t.test('one problem per field: no oneOf/anyOf/discriminator noise', async (t) => {
  const validate = createBodyValidator();
  t.same(validate('chat', { model: 'm', messages: [{ role: 'user', content: [{ type: 'audio' }] }] }), [
    { path: 'messages[0].content[0].type', message: 'must be one of "text", "image_url" or "file" (got "audio")', keyword: 'enum' },
  ]);
  t.same(validate('chat', { model: 'm', messages: [{ role: 'user', content: 'x' }], tool_choice: { type: 'function' } }), [
    { path: 'tool_choice.function', message: 'is required', keyword: 'required' },
  ], 'the object branch of tool_choice is the one reported');
  t.same(validate('chat', { model: 'm', messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'web_search', name: 'w' }] }), [
    { path: 'tools[0].type', message: 'must be "function" (got "web_search"): only function tools are supported', keyword: 'const' },
  ], 'members of an object of the wrong type are not listed');
});

t.test('field names that are not identifiers are quoted in paths', async (t) => {
  const validate = createBodyValidator();
  const part = { type: 'text', text: 'x', cache_control: { type: 'ephemeral', 'max age': 5 } };
  t.same(validate('chat', { model: 'm', messages: [{ role: 'user', content: [part] }] }), [
    { path: 'messages[0].content[0].cache_control["max age"]', message: 'is not a known field here (allowed: type, ttl)', keyword: 'additionalProperties' },
  ]);
});

t.test(`bodies nesting deeper than ${MAX_DEPTH} levels are rejected, not crashed on`, async (t) => {
  const nest = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
  // The body object is level 1, so `extra` may hold MAX_DEPTH - 1 levels.
  const ok = `{"model":"m","messages":[{"role":"user","content":"x"}],"extra":${nest(MAX_DEPTH - 1)}}`;
  t.equal(await check(fakeCtx('chat', ok)), undefined, 'at the limit');
  const deep = `{"model":"m","messages":[{"role":"user","content":"x"}],"extra":${nest(MAX_DEPTH)}}`;
  t.match(await check(fakeCtx('chat', deep)), { status: 400, param: null, message: /more than 128 levels deep/ }, 'one past it');

  let block = '{"type":"text","text":"x"}';
  for (let i = 0; i < 20000; i++) block = `{"type":"tool_result","tool_use_id":"a","content":[${block}]}`;
  const toolResults = `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[${block}]}]}`;
  t.match(await check(fakeCtx('messages', toolResults)), { status: 400, message: /levels deep/ }, '20000 nested tool results');
  // A million containers are past the value limit too, which is checked first (before parsing).
  t.match(await check(fakeCtx('chat', `{"a":${nest(1_000_000)}}`)), { status: 400, message: /levels deep|JSON values/ }, 'a million nested arrays');
});

t.test('a tag of the wrong type is one problem, not two', async (t) => {
  const validate = createBodyValidator();
  t.same(validate('messages', { model: 'm', max_tokens: 1, messages: [{ role: 5, content: 'x' }] }), [
    { path: 'messages[0].role', message: 'must be one of "user", "assistant" or "system" (got 5)', keyword: 'enum' },
  ]);
});

t.test('a huge body with many problems is rejected quickly, naming the first', async (t) => {
  const validate = createBodyValidator();
  const small = { model: 'm', messages: Array.from({ length: 10 }, () => 7) };
  t.equal(validate('chat', small).length, 10, 'a small body gets every problem');

  const huge = { model: 'm', messages: Array.from({ length: 100_000 }, () => 7) };
  const started = performance.now();
  const problems = validate('chat', huge);
  const ms = performance.now() - started;
  t.same(problems, [{ path: 'messages[0]', message: 'must be an object (got an integer)', keyword: 'type' }]);
  // ajv's all-errors mode is quadratic in the error count: 100,000 errors would take minutes.
  t.ok(ms < 2000, `took ${ms.toFixed(0)} ms`);
  t.ok(MAX_VALUES_FOR_ALL_PROBLEMS < 100_000);
});

t.test('a huge body still gets the specific problem for tags and branches', async (t) => {
  const validate = createBodyValidator();
  const filler = Array.from({ length: 3000 }, () => ({ role: 'user', content: 'x' }));
  t.same(validate('chat', { model: 'm', messages: [...filler, { role: 'user', content: [{ type: 'audio' }] }] }), [
    { path: 'messages[3000].content[0].type', message: 'must be one of "text", "image_url" or "file" (got "audio")', keyword: 'enum' },
  ]);
  t.same(validate('chat', { model: 'm', messages: [...filler, { content: 'x' }] }), [
    { path: 'messages[3000].role', message: 'is required', keyword: 'required' },
  ]);
  t.same(validate('chat', { model: 'm', messages: filler, tool_choice: 3 }), [
    { path: 'tool_choice', message: 'must be a string or an object (got an integer)', keyword: 'type' },
  ]);
});
