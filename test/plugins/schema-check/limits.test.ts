// Count limits: tools, messages and content parts beyond the documented maxima get a 400 in the
// client's format naming the field and the limit; bodies at the limits are accepted.
import t, { type Test } from 'tap';
import { fakeCtx, check } from './fake-ctx.js';
import { errorBody } from '../../../lib/errors.js';
import { MAX_CONTENT_PARTS, MAX_JSON_VALUES, MAX_MESSAGES, MAX_TOOLS } from '../../../plugins/schema-check/index.js';
import { jsonValuesAtLeast } from '../../../plugins/schema-check/limits.js';

const chatTool = (i: number) => ({ type: 'function', function: { name: `tool_${i}` } });
const messagesTool = (i: number) => ({ name: `tool_${i}`, input_schema: { type: 'object' } });
const turns = (n: number) => Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'hi' }));
const parts = (n: number) => Array.from({ length: n }, () => ({ type: 'text', text: 'hi' }));

const bodies = {
  chat: (o: Record<string, unknown>) => ({ model: 'm', messages: turns(1), ...o }),
  messages: (o: Record<string, unknown>) => ({ model: 'm', max_tokens: 10, messages: turns(1), ...o }),
};

/** The 400 for `body` on `route`, rendered in the route's format. */
async function refusal(t: Test, route: 'chat' | 'messages', body: object) {
  const err = await check(fakeCtx(route, body));
  t.equal(err?.status, 400, 'status 400');
  return err && { err, wire: errorBody(err, route) as any };
}

for (const route of ['chat', 'messages'] as const) {
  const body = bodies[route];
  const tool = route === 'chat' ? chatTool : messagesTool;

  t.test(`${route}: tools`, async (t) => {
    t.equal(await check(fakeCtx(route, body({ tools: Array.from({ length: MAX_TOOLS }, (_, i) => tool(i)) }))), undefined, 'at the limit: accepted');
    const r = await refusal(t, route, body({ tools: Array.from({ length: MAX_TOOLS + 1 }, (_, i) => tool(i)) }));
    const message = `tools: at most ${MAX_TOOLS} tools per request (got ${MAX_TOOLS + 1}).`;
    if (route === 'chat') t.same(r?.wire, { error: { message, type: 'invalid_request_error', param: 'tools', code: 'array_above_max_length' } });
    else t.same(r?.wire, { type: 'error', error: { type: 'invalid_request_error', message } });
  });

  t.test(`${route}: messages`, async (t) => {
    t.equal(await check(fakeCtx(route, body({ messages: turns(MAX_MESSAGES) }))), undefined, 'at the limit: accepted');
    const r = await refusal(t, route, body({ messages: turns(MAX_MESSAGES + 1) }));
    t.equal(r?.err.param, 'messages');
    t.match(r?.wire.error.message, `messages: at most ${MAX_MESSAGES} messages per request (got ${MAX_MESSAGES + 1}).`);
  });

  t.test(`${route}: content parts, counted over all messages`, async (t) => {
    const half = MAX_CONTENT_PARTS / 2;
    const at = [{ role: 'user', content: parts(half) }, { role: 'assistant', content: 'ok' }, { role: 'user', content: parts(half) }];
    t.equal(await check(fakeCtx(route, body({ messages: at }))), undefined, 'at the limit: accepted');
    const over = [...at.slice(0, 2), { role: 'user', content: parts(half + 1) }];
    const r = await refusal(t, route, body({ messages: over }));
    t.equal(r?.err.param, 'messages[2].content', 'names the message where the count went over');
    t.match(r?.wire.error.message, `messages[2].content: at most ${MAX_CONTENT_PARTS} content parts per request (got ${MAX_CONTENT_PARTS + 1}).`);
  });
}

t.test('messages: system blocks and tool results count as content parts', async (t) => {
  const toolResult = { type: 'tool_result', tool_use_id: 't1', content: parts(MAX_CONTENT_PARTS - 2) };
  const at = { model: 'm', max_tokens: 10, system: parts(1), messages: [{ role: 'user', content: [toolResult] }] };
  t.equal(await check(fakeCtx('messages', at)), undefined, 'at the limit: accepted');
  const r = await refusal(t, 'messages', { ...at, system: parts(2) });
  t.match(r?.wire.error.message, `messages[0].content: at most ${MAX_CONTENT_PARTS} content parts per request (got ${MAX_CONTENT_PARTS + 1}).`);
  const sys = await refusal(t, 'messages', { ...at, system: parts(MAX_CONTENT_PARTS + 1) });
  t.equal(sys?.err.param, 'system');
});

t.test('JSON values: counted from the raw bytes before parsing; past the limit 400 too_many_values', async (t) => {
  // Each property counts twice (its object and the comma before the next one).
  const schema = (n: number) => ({ type: 'object', properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: 'integer' }])) });
  const withSchema = (n: number) => bodies.messages({ tools: [{ name: 't', input_schema: schema(n) }] });
  t.equal(await check(fakeCtx('messages', withSchema(MAX_JSON_VALUES / 2 - 100))), undefined, 'under the limit: accepted');
  const r = await refusal(t, 'messages', withSchema(MAX_JSON_VALUES / 2 + 100));
  t.equal(r?.err.code, 'too_many_values');
  t.match(r?.err.message, `more than ${MAX_JSON_VALUES} JSON values`);
  // Commas, brackets and escaped quotes inside strings are text, not values.
  const text = `a,b[c{d\\"e,`.repeat(MAX_JSON_VALUES);
  t.equal(await check(fakeCtx('chat', bodies.chat({ messages: [{ role: 'user', content: text }] }))), undefined, 'punctuation in text is not counted');
});

t.test('jsonValuesAtLeast stops counting past its bound', async (t) => {
  const raw = JSON.stringify(Array.from({ length: 1000 }, () => [1, 2]));
  t.equal(jsonValuesAtLeast(raw, 1e9), 1 + 1000 + 999 + 1000, 'the outer array, 1000 inner arrays, the commas between them and in them');
  t.equal(jsonValuesAtLeast(raw, 10), 11);
});

t.test("messages: documents' blocks count as content parts, in messages and in tool results", async (t) => {
  const doc = (n: number) => ({ type: 'document', source: { type: 'content', content: parts(n) } });
  // One document block plus its blocks.
  const at = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: [doc(MAX_CONTENT_PARTS - 1)] }] };
  t.equal(await check(fakeCtx('messages', at)), undefined, 'at the limit: accepted');
  const r = await refusal(t, 'messages', { ...at, messages: [{ role: 'user', content: [doc(MAX_CONTENT_PARTS)] }] });
  t.match(r?.wire.error.message, `messages[0].content: at most ${MAX_CONTENT_PARTS} content parts per request (got ${MAX_CONTENT_PARTS + 1}).`);
  // A tool result, its document, and the document's blocks.
  const inResult = { type: 'tool_result', tool_use_id: 't', content: [doc(MAX_CONTENT_PARTS - 1)] };
  const nested = await refusal(t, 'messages', { ...at, messages: [{ role: 'user', content: [inResult] }] });
  t.match(nested?.wire.error.message, `(got ${MAX_CONTENT_PARTS + 1})`);
});
