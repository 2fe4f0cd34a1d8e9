// The plugin as the core drives it: onAttempt per format pair, onResponseBody, onStream; and the
// same-format passthrough that touches nothing but the model name (and the chat usage chunk).
import t from 'tap';
import formatTransform, { localTokenEstimate } from '../../../plugins/format-transform/index.js';
import { estimateInputTokens } from '../../../lib/tokens.js';
import type { Offer, RequestContext } from '../../../lib/context.js';
import { AnswerText, type UpstreamRequest } from '../../../lib/plugin.js';
import type { WireFormat } from '../../../lib/config-types.js';
import { chunk, messageStart, run, shape, upChunk, upDone, usageChunk, upMsg } from './fixtures.js';

const plugin = formatTransform({ config: {} as any, offersByModel: new Map() });

function ctxOf(clientFormat: WireFormat, body: Record<string, any>, over: Partial<RequestContext> = {}): RequestContext {
  return {
    route: clientFormat === 'chat' ? 'chat' : 'messages',
    clientFormat,
    body,
    stream: body.stream === true,
    outputBudget: 4096,
    receivedAt: 1_700_000_000_500,
    ...over,
  } as RequestContext;
}
/** As the core calls it: the attempt's body starts as the client's (offer-pick may have narrowed it). */
function attempt(ctx: RequestContext, up: UpstreamRequest): void {
  up.body = ctx.body;
  plugin.onAttempt!(ctx, up);
}
function upOf(format: WireFormat, maxOutputTokens = 64000, subscription = false): UpstreamRequest {
  return {
    offer: { maxOutputTokens, subscription } as Offer,
    format,
    path: format === 'chat' ? '/chat/completions' : '/v1/messages',
    body: {},
    headers: {},
  };
}

t.test('same format: a shallow copy, unknown fields, cache_control and signatures untouched', async (t) => {
  const body = {
    model: 'test/claude',
    max_tokens: 10,
    messages: [{ role: 'assistant', content: [{ type: 'thinking', thinking: 'x', signature: 'sig' }] }],
    system: [{ type: 'text', text: 's', cache_control: { type: 'ephemeral' } }],
    some_future_field: { a: 1 }, // offer-pick decides which unknown fields are forwarded
  };
  const up = upOf('messages');
  attempt(ctxOf('messages', body), up);
  t.not(up.body, body, 'a fresh object');
  t.strictSame(up.body, body);
  t.equal(up.body.messages, body.messages, 'nested values shared, not copied');
});

t.test('same format: starts from the attempt body, so what offer-pick left out stays out', async (t) => {
  const body = { model: 'test/claude', max_tokens: 10, messages: [{ role: 'user', content: 'x' }], dropped: true };
  const up = upOf('messages');
  up.body = { model: body.model, max_tokens: 10, messages: body.messages };
  plugin.onAttempt!(ctxOf('messages', body), up);
  t.notOk('dropped' in up.body);
  t.equal(up.body.messages, body.messages);
});

t.test('chat passthrough stream: include_usage asked upstream without touching the client body', async (t) => {
  const body = { model: 'test/gpt', stream: true, messages: [{ role: 'user', content: 'x' }], stream_options: { include_usage: false, other: 1 } };
  const up = upOf('chat');
  attempt(ctxOf('chat', body), up);
  t.strictSame(up.body.stream_options, { include_usage: true, other: 1 });
  t.strictSame(body.stream_options, { include_usage: false, other: 1 });
  const plain = upOf('chat');
  attempt(ctxOf('chat', { model: 'test/gpt', messages: [] }), plain);
  t.notOk('stream_options' in plain.body, 'not for a non-stream request');
});

t.test('chat passthrough: the upstream is told the output budget the hold covers', async (t) => {
  const messages = [{ role: 'user', content: 'x' }];
  const none = { model: 'test/gpt', messages };
  const up = upOf('chat', 2000);
  attempt(ctxOf('chat', none), up);
  t.equal(up.body.max_completion_tokens, 2000, 'no client budget: the output budget within the offer ceiling');
  t.notOk('max_tokens' in up.body);
  t.notOk('max_completion_tokens' in none, 'the client body is untouched');
  const roomy = upOf('chat');
  attempt(ctxOf('chat', none), roomy);
  t.equal(roomy.body.max_completion_tokens, 4096, 'ctx.outputBudget below the ceiling');
  const sub = upOf('chat', 8, true);
  attempt(ctxOf('chat', none, { outputBudget: 16 }), sub);
  t.equal(sub.body.max_completion_tokens, 16, 'a subscription offer: at least the minimum the hold was sized for');

  const both = { model: 'test/gpt', messages, max_completion_tokens: 300, max_tokens: 50 };
  const upBoth = upOf('chat');
  attempt(ctxOf('chat', both), upBoth);
  t.equal(upBoth.body.max_completion_tokens, 300, 'max_completion_tokens wins');
  t.notOk('max_tokens' in upBoth.body, 'so max_tokens does not go upstream');
  t.equal(both.max_tokens, 50, 'the client body is untouched');
  const old = upOf('chat');
  attempt(ctxOf('chat', { model: 'test/gpt', messages, max_tokens: 50 }), old);
  t.equal(old.body.max_tokens, 50, 'only max_tokens: passed as it is');
  t.notOk('max_completion_tokens' in old.body);
});

t.test('chat → messages: include_obfuscation and the rest of stream_options stay behind', async (t) => {
  const up = upOf('messages');
  attempt(ctxOf('chat', { model: 'test/claude', stream: true, messages: [{ role: 'user', content: 'hi' }],
    stream_options: { include_usage: true, include_obfuscation: false } }), up);
  t.notOk('stream_options' in up.body);
  t.equal(up.body.stream, true);
});

t.test('cross-format attempts build the upstream format; chat default max_tokens = output budget within the offer ceiling', async (t) => {
  const chatBody = { model: 'test/claude', messages: [{ role: 'user', content: 'hi' }] };
  const up = upOf('messages', 2000);
  attempt(ctxOf('chat', chatBody), up);
  t.strictSame(up.body, { model: 'test/claude', max_tokens: 2000, messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] });
  const up2 = upOf('messages');
  attempt(ctxOf('chat', chatBody), up2);
  t.equal(up2.body.max_tokens, 4096, 'ctx.outputBudget');
  const sub = upOf('messages', 8, true);
  attempt(ctxOf('chat', chatBody, { outputBudget: 16 }), sub);
  t.equal(sub.body.max_tokens, 16, 'a subscription offer: at least the minimum');
  const up3 = upOf('chat');
  attempt(ctxOf('messages', { model: 'test/gpt', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] }), up3);
  t.strictSame(up3.body, {
    model: 'test/gpt',
    messages: [{ role: 'user', content: 'hi' }],
    max_completion_tokens: 50,
    stream: true,
    stream_options: { include_usage: true },
  });
});

t.test('a subscription-backed offer: the upstream is asked for at least 16 output tokens, on every path', async (t) => {
  const messages = [{ role: 'user', content: 'hi' }];
  const cases: Array<[string, WireFormat, Record<string, any>, WireFormat, string]> = [
    ['messages → messages', 'messages', { model: 'm', max_tokens: 5, messages }, 'messages', 'max_tokens'],
    ['chat max_tokens → chat', 'chat', { model: 'm', max_tokens: 5, messages }, 'chat', 'max_tokens'],
    ['chat max_completion_tokens → chat', 'chat', { model: 'm', max_completion_tokens: 5, max_tokens: 3, messages }, 'chat', 'max_completion_tokens'],
    ['chat max_tokens → messages', 'chat', { model: 'm', max_tokens: 5, messages }, 'messages', 'max_tokens'],
    ['chat max_completion_tokens → messages', 'chat', { model: 'm', max_completion_tokens: 1, messages }, 'messages', 'max_tokens'],
    ['messages → chat', 'messages', { model: 'm', max_tokens: 5, messages }, 'chat', 'max_completion_tokens'],
  ];
  for (const [what, client, body, upstream, field] of cases) {
    const sent = structuredClone(body);
    const sub = upOf(upstream, 8, true);
    attempt(ctxOf(client, body, { outputBudget: 16 }), sub);
    t.equal(sub.body[field], 16, `${what}: ${field} raised to the minimum`);
    t.strictSame(body, sent, `${what}: the client's body is untouched (failover reuses it)`);
    const plain = upOf(upstream, 8);
    attempt(ctxOf(client, body, { outputBudget: 5 }), plain);
    t.equal(plain.body[field], body.max_completion_tokens ?? body.max_tokens, `${what}: a plain offer gets the client's budget`);
    const above = upOf(upstream, 8000, true);
    const roomy = Object.fromEntries(Object.entries(body).map(([k, v]) => [k, k.startsWith('max_') ? 300 : v]));
    attempt(ctxOf(client, roomy), above);
    t.equal(above.body[field], 300, `${what}: a budget above the minimum is kept`);
  }
  const none = upOf('chat', 8, true);
  attempt(ctxOf('chat', { model: 'm', messages }, { outputBudget: 16 }), none);
  t.equal(none.body.max_completion_tokens, 16, 'chat without a budget: the minimum');
  t.notOk('max_tokens' in none.body);

  const counted = upOf('messages', 8, true);
  attempt(ctxOf('messages', { model: 'm', messages, max_tokens: 5 }, { route: 'count_tokens', outputBudget: 16 }), counted);
  t.equal(counted.body.max_tokens, 5, 'count_tokens: a token count is not an output budget, left as sent');
});

t.test('onResponseBody: same format restores the model only; cross format converts', async (t) => {
  const body = { id: 'msg_1', model: 'claude-up', content: [{ type: 'text', text: 'x' }], extra: true };
  const out = plugin.onResponseBody!(ctxOf('messages', { model: 'test/claude' }), body, upOf('messages'));
  t.strictSame(out, { id: 'msg_1', model: 'test/claude', content: [{ type: 'text', text: 'x' }], extra: true });
  const count = plugin.onResponseBody!(ctxOf('messages', { model: 'test/claude' }, { route: 'count_tokens' }), { input_tokens: 12 }, upOf('messages'));
  t.strictSame(count, { input_tokens: 12 }, 'count_tokens answers get no model');
  const chat = plugin.onResponseBody!(
    ctxOf('chat', { model: 'test/claude' }),
    { id: 'msg_2', model: 'claude-up', content: [{ type: 'text', text: 'hey' }], stop_reason: 'end_turn', usage: { input_tokens: 3, output_tokens: 1 } },
    upOf('messages'),
  );
  t.match(chat, { object: 'chat.completion', model: 'test/claude', created: 1_700_000_000, choices: [{ message: { content: 'hey' }, finish_reason: 'stop' }] });
  const msg = plugin.onResponseBody!(
    ctxOf('messages', { model: 'test/gpt' }),
    { id: 'chatcmpl-1', model: 'gpt-up', choices: [{ index: 0, message: { role: 'assistant', content: 'yo' }, finish_reason: 'stop' }] },
    upOf('chat'),
  );
  t.match(msg, { type: 'message', model: 'test/gpt', content: [{ type: 'text', text: 'yo' }], stop_reason: 'end_turn' });
});

t.test('onResponseBody: a same-format answer is the upstream\'s own text with the model renamed, not serialized again', async (t) => {
  const answer = (text: string, model = 'test/gpt', route?: 'count_tokens') => {
    const body = JSON.parse(text);
    const out = plugin.onResponseBody!(ctxOf('chat', { model }, route ? { route } : {}), body, upOf('chat'), text);
    return { out, body };
  };
  // Spacing, key order, number spelling (1.0, 1e3) and escapes stay as the upstream wrote them.
  const compact = '{"id":"c1","model":"gpt-up","x":1.0,"y":1e3,"s":"caf\\u00e9","usage":{"prompt_tokens":3}}';
  let r = answer(compact);
  t.ok(r.out instanceof AnswerText);
  t.equal(r.out.text, compact.replace('"gpt-up"', '"test/gpt"'));
  t.equal(r.body.model, 'test/gpt', 'the parsed body is renamed too, for the hooks after');
  const pretty = '{\n  "id": "c1",\n  "model" :\t"gpt-up",\n  "choices": []\n}';
  t.equal(answer(pretty).out.text, pretty.replace('"gpt-up"', '"test/gpt"'), 'pretty-printed: spaces around the colon');
  // The key's spelling inside a string has escaped quotes, so it is not a second key.
  const quoting = '{"model":"gpt-up","choices":[{"message":{"content":"say \\"model\\":\\"gpt-up\\""}}]}';
  r = answer(quoting);
  t.equal(r.out.text, quoting.replace('{"model":"gpt-up"', '{"model":"test/gpt"'), 'only the key is renamed, not the quote in the content');
  t.equal(JSON.parse(r.out.text).choices[0].message.content, 'say "model":"gpt-up"');
  t.equal(answer('{"model":"test/gpt","a":1.0}').out.text, '{"model":"test/gpt","a":1.0}', 'the same name: the text untouched');
  t.equal(answer('{"input_tokens":12}', 'test/gpt', 'count_tokens').out.text, '{"input_tokens":12}', 'count_tokens: untouched');

  // Where the text cannot be edited with certainty, the body is serialized with the client model.
  for (const [why, text] of [
    ['a second "model" key (nested)', '{"model":"gpt-up","choices":[{"message":{"model":"gpt-up"}}]}'],
    ['the value spelled with an escape', '{"model":"gpt\\u002dup","a":1}'],
    ['the key spelled with an escape', '{"mod\\u0065l":"gpt-up","a":1}'],
    ['a model that is not a string', '{"model":7,"a":1}'],
    ['the one plain "model" key nested (the top-level one escaped)', '{"mod\\u0065l":"gpt-up","x":{"model":"gpt-up"}}'],
    ['the one plain spelling inside a key', '{"mod\\u0065l":"gpt-up","x\\"model":"gpt-up"}'],
    ['a string ending in "model beside the key', '{"model":"gpt-up","c":"say \\"model"}'],
  ]) {
    r = answer(text);
    t.notOk(r.out instanceof AnswerText, why);
    t.equal(r.out.model, 'test/gpt', why);
  }
});

t.test('chat passthrough stream: chunks with the right model are not serialized again; others get the client model', async (t) => {
  const ctx = ctxOf('chat', { model: 'test/gpt', stream: true, messages: [] });
  const hook = plugin.onStream!(ctx, upOf('chat'))!;
  const same = upChunk({ id: 'c', object: 'chat.completion.chunk', model: 'test/gpt', choices: [{ index: 0, delta: { content: 'a' } }] });
  const raw = same.data;
  t.equal(hook.onEvent(same), same);
  t.equal(same.data, raw, 'the upstream text is passed on as it came');
  const other = chunk({ content: 'b' });
  const out = hook.onEvent(other) as any;
  t.equal(out.json.model, 'test/gpt');
  t.equal(out.json.choices[0].delta.content, 'b');
  t.equal(out.json.system_fingerprint, 'fp_06737a9306', 'other fields unchanged');
  t.strictSame(run(hook, [usageChunk({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }), upDone()]).map((e) => e.data), ['[DONE]'], 'usage chunk dropped: the client did not ask');
  const asked = plugin.onStream!(ctxOf('chat', { model: 'test/gpt', stream: true, stream_options: { include_usage: true } }), upOf('chat'))!;
  t.equal(shape(run(asked, [usageChunk({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 })])).length, 1, 'kept when asked');
});

t.test('messages passthrough stream: message_start gets the client model; every other event untouched', async (t) => {
  const hook = plugin.onStream!(ctxOf('messages', { model: 'test/claude', stream: true }), upOf('messages'))!;
  const start = hook.onEvent(messageStart()) as any;
  t.equal(start.json.message.model, 'test/claude');
  t.equal(start.event, 'message_start');
  const delta = upMsg({ type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig==' } });
  const raw = delta.data;
  t.equal(hook.onEvent(delta), delta);
  t.equal(delta.data, raw);
});

t.test('cross-format streams get a converting hook', async (t) => {
  const toChat = plugin.onStream!(ctxOf('chat', { model: 'test/claude', stream: true }), upOf('messages'))!;
  t.match(shape(run(toChat, [messageStart()])), [{ model: 'test/claude', choices: [{ delta: { role: 'assistant' } }] }]);
  const toMessages = plugin.onStream!(ctxOf('messages', { model: 'test/gpt', stream: true }), upOf('chat'))!;
  t.match(shape(run(toMessages, [chunk({ content: 'x' }, 'stop'), upDone()])).at(-1), { event: 'message_stop' });
});

t.test('failure mode 18: the local count_tokens estimate counts the system prompt, the tools and every message', async (t) => {
  const messages = [
    { role: 'user', content: 'What is the weather like in Paris today?' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'get_weather', input: { city: 'Paris' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'Sunny and 24 degrees' }] },
  ];
  const system = 'You are a meticulous assistant who answers in full sentences and cites sources.';
  const tools = [{ name: 'get_weather', description: 'Current weather for a city', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }];
  // As offer-pick leaves the context: its input estimate of the body.
  const estimate = (body: Record<string, any>) => localTokenEstimate({ body, estimatedInputTokens: estimateInputTokens(body, 'messages') });
  const bare = estimate({ model: 'm', messages: messages.slice(0, 1) });
  const all = estimate({ model: 'm', messages });
  const withSystem = estimate({ model: 'm', messages, system });
  const withTools = estimate({ model: 'm', messages, system, tools });
  t.ok(bare > 0);
  t.ok(all > bare, 'every message counts');
  t.ok(withSystem > all, 'the system prompt counts');
  t.ok(withTools > withSystem, 'the tools count');
  // On the high side: at least a character-per-4 count of all the text it holds.
  const chars = JSON.stringify({ messages, system, tools }).length;
  t.ok(withTools >= Math.ceil(chars / 4), `${withTools} ≥ ${Math.ceil(chars / 4)}`);
});

t.test('count_tokens on a chat offer: the answer reuses the input estimate of offer-pick', async (t) => {
  const chatOffer = { provider: { format: 'chat' } } as Offer;
  const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
  const ctx = ctxOf('messages', body, { route: 'count_tokens', candidates: [chatOffer], estimatedInputTokens: 1234 });
  plugin.onRequest!(ctx);
  t.strictSame(ctx.reply, { status: 200, body: { input_tokens: 1234 } }, 'not tokenized again');
  const withTools = ctxOf('messages', { ...body, tools: [{ name: 'f' }] }, { route: 'count_tokens', candidates: [chatOffer], estimatedInputTokens: 1234 });
  plugin.onRequest!(withTools);
  t.strictSame(withTools.reply, { status: 200, body: { input_tokens: 1234 + 350 } }, 'plus the tools preamble');
  const messagesOffer = { provider: { format: 'messages' } } as Offer;
  const upstream = ctxOf('messages', body, { route: 'count_tokens', candidates: [messagesOffer, chatOffer] });
  plugin.onRequest!(upstream);
  t.equal(upstream.reply, undefined, 'a messages offer counts upstream');
  t.same(upstream.candidates, [messagesOffer], 'failing over to messages offers only');
});
