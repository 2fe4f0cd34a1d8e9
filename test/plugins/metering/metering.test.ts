import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import metering from '../../../plugins/metering/index.js';
import budgetHold from '../../../plugins/budget-hold/index.js';
import { holdOf } from '../../../plugins/budget-hold/hold.js';
import { StreamEvent, type UpstreamRequest } from '../../../lib/plugin.js';
import type { Offer, Outcome, RequestContext, Route } from '../../../lib/context.js';
import { GatewayError } from '../../../lib/errors.js';
import type { Ledger } from '../../../lib/store/types.js';
import { countTextTokens } from '../../../lib/tokens.js';
import { checkInvariants } from '../../helpers/invariants.js';
import { TOOL_CALL_TOKENS } from '../../../plugins/metering/output-text.js';
import { REFUSALS_RECORDED_PER_MINUTE } from '../../../lib/store/refusal-counts.js';
import { pluginEnv, requestContext, seedAccount, tempStore, testOffer } from '../../lib/store/fixtures/store.js';

const USD = 1_000_000_000;
// 3000 / 15000 / 300 / 3750 nano-USD per token; 1-hour cache writes 6000 (2 × input by default).
const messagesOffer = testOffer('m@messages', 'messages', { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 });
// 2500 / 10000 / 1250 / 2500 (cache write unpriced: billed as input).
const chatOffer = testOffer('m@chat', 'chat', { input: 2.5, output: 10, cache_read: 1.25 });

async function setup(t: Test) {
  const ts = tempStore(t);
  const a = await seedAccount(ts.store, 100 * USD);
  const env = pluginEnv(ts.store, ts.config);
  const meter = metering(env);
  const hold = budgetHold(env);
  const auth = { accountId: a.accountId, keyId: a.keyId, keyAllowedModels: null, monthlyLimitNano: null,
    routing: { allow: null, deny: [], priceCapInput: null, priceCapOutput: null } };

  const contextFor = (candidates: Offer[], over: Partial<RequestContext> = {}) =>
    requestContext({ route: 'messages', candidates, estimatedInputTokens: 2000, outputBudget: 1000, auth,
      model: candidates[0]?.model, body: { model: 'm' }, ...over });
  /** Request phase: the hold is taken for these candidates. */
  async function begin(candidates: Offer[], over: Partial<RequestContext> = {}) {
    const ctx = contextFor(candidates, over);
    await hold.onRequest!(ctx);
    return ctx;
  }
  const up = (offer: Offer): UpstreamRequest => ({ offer, format: offer.provider.format, path: '/', body: {}, headers: {} });
  const commit = (ctx: RequestContext, offer: Offer) => {
    ctx.offer = offer;
    ctx.status = 200;
    ctx.firstByteAt = ctx.startedAt + 12;
  };
  /** onDone in reverse chain order: metering, then budget-hold. */
  async function end(ctx: RequestContext, outcome: Outcome) {
    await meter.onDone!(ctx, outcome);
    await hold.onDone!(ctx, outcome);
    return { row: await ts.store.history.get(ctx.id), charged: (await ts.store.ledger.balance(a.accountId)).balance };
  }
  async function whole(offer: Offer, body: any, over: Partial<RequestContext> = {}) {
    const ctx = await begin([offer], over);
    t.equal(meter.onResponseBody!(ctx, body, up(offer)), undefined, 'the body passes unchanged');
    commit(ctx, offer);
    return { ctx, ...(await end(ctx, 'ok')) };
  }
  async function stream(offer: Offer, events: StreamEvent[], outcome: Outcome, over: Partial<RequestContext> = {}) {
    const ctx = await begin([offer], { stream: true, ...over });
    const h = meter.onStream!(ctx, up(offer))!;
    commit(ctx, offer);
    for (const ev of events) t.equal(h.onEvent(ev), ev, 'events pass unchanged');
    if (outcome === 'ok') h.onEnd?.();
    if (outcome === 'error') ctx.error = new GatewayError(502, 'api_error', 'upstream_stream_error', 'The upstream stream broke');
    return { ctx, ...(await end(ctx, outcome)) };
  }
  const spent = async () => 100 * USD - (await ts.store.ledger.balance(a.accountId)).balance;
  return { ...ts, a, meter, hold, contextFor, begin, up, commit, end, whole, stream, spent };
}

const msg = (type: string, rest: object) => StreamEvent.of({ type, ...rest }, type);
const chunk = (delta: object, extra: object = {}) => StreamEvent.of({ id: 'c', choices: [{ index: 0, delta }], ...extra });

t.test('messages body: every token class at its own price', async (t) => {
  const s = await setup(t);
  const { ctx, row } = await s.whole(messagesOffer, {
    content: [{ type: 'text', text: 'hi' }],
    usage: { input_tokens: 100, output_tokens: 50, cache_read_input_tokens: 1000, cache_creation_input_tokens: 200 },
  });
  const cost = 100 * 3000 + 50 * 15000 + 1000 * 300 + 200 * 3750;
  t.equal(await s.spent(), cost);
  t.same(ctx.usage, { input: 100, output: 50, cacheRead: 1000, cacheWrite: 200, cacheWrite1h: 0 });
  t.match(row, { costNano: cost, holdNano: 2000 * 3750 + 1000 * 15000, status: 'ok', httpStatus: 200, listing: 'm@messages',
    usage: { input: 100, output: 50, cacheRead: 1000, cacheWrite: 200, cacheWrite1h: 0 }, stream: false, error: null, ttfbMs: 12 });
  t.same(await checkInvariants(s.store, { noOpenHolds: true }), []);
});

t.test('chat body: prompt_tokens includes the cached tokens', async (t) => {
  const s = await setup(t);
  const { ctx } = await s.whole(chatOffer, {
    choices: [{ message: { content: 'hi' } }],
    usage: { prompt_tokens: 1300, completion_tokens: 50, prompt_tokens_details: { cached_tokens: 1000 } },
  });
  t.same(ctx.usage, { input: 300, output: 50, cacheRead: 1000, cacheWrite: 0, cacheWrite1h: 0 });
  t.equal(await s.spent(), 300 * 2500 + 50 * 10000 + 1000 * 1250);
});

t.test('messages stream: message_start usage plus cumulative message_delta usage', async (t) => {
  const s = await setup(t);
  const { ctx, row } = await s.stream(messagesOffer, [
    msg('message_start', { message: { usage: { input_tokens: 100, cache_read_input_tokens: 1000, cache_creation_input_tokens: 200, output_tokens: 1 } } }),
    msg('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    msg('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hello there' } }),
    msg('ping', {}),
    msg('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 20 } }),
    msg('message_delta', { delta: {}, usage: { output_tokens: 50 } }),
    msg('message_stop', {}),
  ], 'ok');
  t.same(ctx.usage, { input: 100, output: 50, cacheRead: 1000, cacheWrite: 200, cacheWrite1h: 0 });
  t.equal(await s.spent(), 100 * 3000 + 50 * 15000 + 1000 * 300 + 200 * 3750);
  t.match(row, { stream: true, status: 'ok' });
});

// Recorded vendor traffic, copied from the shared fixtures (see test/fixtures/replay/PROVENANCE.md).
const replay = (name: string) => readFileSync(new URL(`../../fixtures/replay/${name}`, import.meta.url), 'utf8');
const replayedEvents = (name: string) => replay(name).split('\n').filter((l) => l.startsWith('data:'))
  .map((l) => JSON.parse(l.slice(5))).map((j) => StreamEvent.of(j, j.type));
// 3000 / 15000 / 300 / 3750 nano-USD per token, 1-hour writes 6000.
const cache1hOffer = testOffer('m@messages-1h', 'messages', { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75, cache_write_1h: 6 });

t.test('no usage reported: recorded replies are charged close to their true output, tool calls included', async (t) => {
  const s = await setup(t);
  // Recorded non-stream replies and the output the vendor counted; charged with their usage removed.
  // Plain text within 10% (the tokenizer is not the vendor's; very short replies are left out, where
  // a vendor's few end-of-turn tokens dominate), tool calls at least half and never above the truth.
  const cases: [string, Offer, 'text' | 'tools'][] = [
    ['anthropic-cache.json', messagesOffer, 'text'], ['anthropic-max-tokens.json', messagesOffer, 'text'],
    ['openai-cached.json', chatOffer, 'text'], ['openai-length.json', chatOffer, 'text'],
    ['anthropic-tools-parallel.json', messagesOffer, 'tools'], ['openai-tools-parallel.json', chatOffer, 'tools'],
  ];
  for (const [name, offer, kind] of cases) {
    const body = JSON.parse(replay(name));
    const truth = body.usage.output_tokens ?? body.usage.completion_tokens;
    delete body.usage;
    const { ctx } = await s.whole(offer, body);
    const ratio = ctx.usage!.output / truth;
    if (kind === 'text') t.ok(ratio >= 0.9 && ratio <= 1.1, `${name}: charged ${ctx.usage!.output} of ${truth} output tokens`);
    else t.ok(ratio >= 0.5 && ratio <= 1, `${name}: charged ${ctx.usage!.output} of ${truth} output tokens`);
  }
});

t.test('cache writes: a replayed vendor usage object, each lifetime at its own price', async (t) => {
  const s = await setup(t);
  const body = JSON.parse(replay('anthropic-cache.json'));
  // Recorded: input 3, cache read 4597, cache writes 598 (all 5-minute), output 350.
  t.same(body.usage.cache_creation, { ephemeral_5m_input_tokens: 598, ephemeral_1h_input_tokens: 0 });
  const five = await s.whole(cache1hOffer, body);
  t.same(five.ctx.usage, { input: 3, output: 350, cacheRead: 4597, cacheWrite: 598, cacheWrite1h: 0 });
  const fiveCost = 3 * 3000 + 350 * 15000 + 4597 * 300 + 598 * 3750;
  t.match(five.row, { costNano: fiveCost, usage: { cacheWrite: 598, cacheWrite1h: 0 } });

  // The same object with the writes split across both lifetimes, as the vendor reports 1-hour writes.
  const split = structuredClone(body);
  split.usage.cache_creation = { ephemeral_5m_input_tokens: 98, ephemeral_1h_input_tokens: 500 };
  const mixed = await s.whole(cache1hOffer, split);
  t.same(mixed.ctx.usage, { input: 3, output: 350, cacheRead: 4597, cacheWrite: 598, cacheWrite1h: 500 });
  const mixedCost = 3 * 3000 + 350 * 15000 + 4597 * 300 + 98 * 3750 + 500 * 6000;
  t.match(mixed.row, { costNano: mixedCost, usage: { cacheWrite: 598, cacheWrite1h: 500 } }, 'history keeps the 1-hour count');
  t.ok(mixed.row!.holdNano >= mixedCost, 'the hold covered it');
  t.equal(await s.spent(), fiveCost + mixedCost);
});

t.test('cache writes in a replayed stream: a later total without the split keeps the 1-hour part', async (t) => {
  const s = await setup(t);
  const events = replayedEvents('anthropic-cache-write-stream.sse');
  const start = events[0].json as any;
  // Recorded: message_start with 1165 cache writes (no split), message_delta with output 201.
  t.equal(start.message.usage.cache_creation_input_tokens, 1165);
  start.message.usage.cache_creation = { ephemeral_5m_input_tokens: 165, ephemeral_1h_input_tokens: 1000 };
  const delta = events.find((e) => (e.json as any).type === 'message_delta')!.json as any;
  delta.usage = { ...delta.usage, input_tokens: 4, cache_creation_input_tokens: 1165, cache_read_input_tokens: 0 };
  const { ctx, row } = await s.stream(cache1hOffer, events.map((e) => StreamEvent.of(e.json, (e.json as any).type)), 'ok');
  t.same(ctx.usage, { input: 4, output: 201, cacheRead: 0, cacheWrite: 1165, cacheWrite1h: 1000 });
  t.equal(row!.costNano, 4 * 3000 + 201 * 15000 + 165 * 3750 + 1000 * 6000);
});

t.test('1-hour writes above the reported total count in full, never as negative 5-minute writes', async (t) => {
  const s = await setup(t);
  const { ctx, row } = await s.whole(cache1hOffer, {
    content: [{ type: 'text', text: 'hi' }],
    usage: { input_tokens: 1, output_tokens: 1, cache_creation_input_tokens: 10, cache_creation: { ephemeral_1h_input_tokens: 50 } },
  });
  t.same(ctx.usage, { input: 1, output: 1, cacheRead: 0, cacheWrite: 50, cacheWrite1h: 50 });
  t.equal(row!.costNano, 3000 + 15000 + 50 * 6000);
  const onlySplit = await s.whole(cache1hOffer, {
    content: [{ type: 'text', text: 'hi' }],
    usage: { input_tokens: 1, output_tokens: 1, cache_creation: { ephemeral_5m_input_tokens: 7, ephemeral_1h_input_tokens: 5 } },
  });
  t.same(onlySplit.ctx.usage, { input: 1, output: 1, cacheRead: 0, cacheWrite: 12, cacheWrite1h: 5 }, 'no total: the split\'s sum');
});

t.test('chat stream: the final usage chunk', async (t) => {
  const s = await setup(t);
  const { ctx } = await s.stream(chatOffer, [
    chunk({ role: 'assistant', content: '' }, { usage: null }),
    chunk({ content: 'Hello' }, { usage: null }),
    chunk({}, { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
    StreamEvent.of({ id: 'c', choices: [], usage: { prompt_tokens: 1300, completion_tokens: 50, prompt_tokens_details: { cached_tokens: 1000 } } }),
    new StreamEvent({ data: '[DONE]' }),
  ], 'ok');
  t.same(ctx.usage, { input: 300, output: 50, cacheRead: 1000, cacheWrite: 0, cacheWrite1h: 0 });
  t.equal(await s.spent(), 300 * 2500 + 50 * 10000 + 1000 * 1250);
});

t.test('a broken messages stream is charged the reported input and the output streamed so far', async (t) => {
  const s = await setup(t);
  const text = 'The quick brown fox jumps over the lazy dog, twice over and then some more.';
  const { ctx, row } = await s.stream(messagesOffer, [
    msg('message_start', { message: { usage: { input_tokens: 100, cache_read_input_tokens: 0, output_tokens: 1 } } }),
    msg('content_block_delta', { index: 0, delta: { type: 'text_delta', text: text.slice(0, 30) } }),
    msg('content_block_delta', { index: 0, delta: { type: 'text_delta', text: text.slice(30) } }),
  ], 'error');
  const out = countTextTokens(text);
  t.ok(out > 5);
  t.same(ctx.usage, { input: 100, output: out, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 });
  t.equal(await s.spent(), 100 * 3000 + out * 15000);
  t.match(row, { status: 'error', error: /stream broke/, costNano: 100 * 3000 + out * 15000 });
  t.same(await checkInvariants(s.store, { noOpenHolds: true }), []);
});

t.test('an abandoned chat stream without usage: estimated input, counted output (text, tool name, framing and arguments)', async (t) => {
  const s = await setup(t);
  const { ctx, row } = await s.stream(chatOffer, [
    chunk({ content: 'Let me look that up.' }),
    chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '"weather in Paris"}' } }] }),
  ], 'client_gone');
  const out = countTextTokens('Let me look that up.lookup{"q":"weather in Paris"}') + TOOL_CALL_TOKENS;
  t.same(ctx.usage, { input: 2000, output: out, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 });
  t.equal(await s.spent(), 2000 * 2500 + out * 10000);
  t.match(row, { status: 'client_gone' });
});

t.test('a body without usage is charged from its text', async (t) => {
  const s = await setup(t);
  const { ctx } = await s.whole(messagesOffer, { content: [{ type: 'text', text: 'Four score and seven years ago' }] });
  t.same(ctx.usage, { input: 2000, output: countTextTokens('Four score and seven years ago'), cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 });
});

t.test('absurd or negative upstream numbers are clamped; the charge never exceeds the hold', async (t) => {
  const s = await setup(t);
  const { ctx, row } = await s.whole(messagesOffer, {
    usage: { input_tokens: -50, output_tokens: 1e15, cache_read_input_tokens: 'lots', cache_creation_input_tokens: null },
  });
  t.same(ctx.usage, { input: 2000, output: 100_000_000, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 }, 'a negative input is clamped, then estimated');
  const holdAmount = 2000 * 3750 + 1000 * 15000; // input at the cache-write price (the request asks for no 1-hour TTL)
  t.equal(row!.costNano, holdAmount, 'charged exactly the hold');
  t.equal(await s.spent(), holdAmount);
  const neg = await s.whole(chatOffer, { usage: { prompt_tokens: 10, completion_tokens: 0, prompt_tokens_details: { cached_tokens: 50 } } });
  t.same(neg.ctx.usage, { input: 0, output: 0, cacheRead: 50, cacheWrite: 0, cacheWrite1h: 0 }, 'cached above prompt: input 0, never negative');
  t.same(await checkInvariants(s.store, { noOpenHolds: true }), []);
});

t.test('failover: only the attempt that served is charged', async (t) => {
  const s = await setup(t);
  const ctx = await s.begin([messagesOffer, chatOffer], { stream: true });
  const first = s.meter.onStream!(ctx, s.up(messagesOffer))!;
  first.onEvent(msg('message_start', { message: { usage: { input_tokens: 5000, output_tokens: 1 } } }));
  ctx.attempts.push({ listing: 'm@messages', outcome: 'failed', reason: 'error event before output', durationMs: 3 });
  const second = s.meter.onStream!(ctx, s.up(chatOffer))!;
  s.commit(ctx, chatOffer);
  second.onEvent(chunk({ content: 'ok' }));
  second.onEvent(StreamEvent.of({ id: 'c', choices: [], usage: { prompt_tokens: 100, completion_tokens: 2 } }));
  ctx.attempts.push({ listing: 'm@chat', outcome: 'ok', status: 200, durationMs: 5 });
  const { row } = await s.end(ctx, 'ok');
  t.equal(await s.spent(), 100 * 2500 + 2 * 10000);
  t.match(row, { listing: 'm@chat', attempts: [{ listing: 'm@messages', outcome: 'failed' }, { listing: 'm@chat', outcome: 'ok' }] });
});

t.test('nothing served: the hold is released and the failure is recorded', async (t) => {
  const s = await setup(t);
  const ctx = await s.begin([messagesOffer], { stream: true });
  const h = s.meter.onStream!(ctx, s.up(messagesOffer))!;
  h.onEvent(msg('message_start', { message: { usage: { input_tokens: 100, output_tokens: 1 } } }));
  ctx.attempts.push({ listing: 'm@messages', outcome: 'failed', reason: 'upstream 503', status: 503, durationMs: 4 });
  ctx.error = new GatewayError(503, 'overloaded_error', 'no_offer_available', 'No offer could serve the request.');
  ctx.status = 503;
  const { row } = await s.end(ctx, 'error');
  t.equal(await s.spent(), 0);
  t.match(row, { status: 'error', httpStatus: 503, costNano: 0, listing: null, ttfbMs: null, error: /No offer/,
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 } });
  t.same(await checkInvariants(s.store, { noOpenHolds: true }), []);
});

t.test('refusals (no upstream attempt, an error status) are bounded per key; tried requests are always recorded', async (t) => {
  const s = await setup(t);
  const N = REFUSALS_RECORDED_PER_MINUTE;
  const ids: string[] = [];
  // All in one minute, and one not yet begun: arrival times read from the clock would split the
  // refusals over two minutes when the loop runs as a minute turns (and a minute over is forgotten).
  const receivedAt = (Math.floor(Date.now() / 60_000) + 1) * 60_000;
  for (let i = 0; i < N + 30; i++) {
    const ctx = s.contextFor([messagesOffer], { route: 'chat', receivedAt });
    ctx.error = new GatewayError(400, 'invalid_request_error', 'invalid_json', 'Invalid JSON body');
    ctx.status = 400;
    await s.meter.onDone!(ctx, 'error');
    ids.push(ctx.id);
  }
  const rows = await s.store.history.list(s.a.accountId, { limit: 1000 });
  t.equal(rows.length, N + 1, `${N} refusals recorded, one summary`);
  t.match(rows.find((r) => r.notRecorded), { notRecorded: 30, error: /^30 more refused requests/ });
  t.match(await s.store.history.get(ids[0]), { httpStatus: 400, error: 'Invalid JSON body' });
  t.equal(await s.store.history.get(ids.at(-1)!), null);
  t.equal(s.store.history.refusalsNotRecorded(), 30);

  // A failure after an upstream attempt is never folded into the count.
  for (let i = 0; i < 5; i++) {
    const ctx = await s.begin([messagesOffer]);
    ctx.attempts.push({ listing: 'm@messages', outcome: 'failed', reason: 'upstream 503', status: 503, durationMs: 4 });
    ctx.status = 503;
    await s.end(ctx, 'error');
  }
  t.equal((await s.store.history.list(s.a.accountId, { limit: 1000 })).length, N + 1 + 5);
  t.equal(s.store.history.refusalsNotRecorded(), 30);
});

t.test('a settle that fails releases the hold, still writes the row, and is reported', async (t) => {
  const s = await setup(t);
  const ctx = await s.begin([messagesOffer]);
  s.meter.onResponseBody!(ctx, { usage: { input_tokens: 10, output_tokens: 5 } }, s.up(messagesOffer));
  s.commit(ctx, messagesOffer);
  s.store.ledger.settle = () => { throw new Error('disk I/O error'); };
  t.throws(() => s.meter.onDone!(ctx, 'ok'), /disk I\/O error/, 'the chain logs it');
  t.equal(holdOf(ctx)!.ended, true, 'released instead');
  t.equal((await s.store.ledger.balance(s.a.accountId)).held, 0);
  t.match(await s.store.history.get(ctx.id), { status: 'ok', costNano: 0 });
  t.same(await checkInvariants(s.store, { noOpenHolds: true }), []);
});

t.test('when the release after a failed settle fails too, budget-hold releases the hold', async (t) => {
  const s = await setup(t);
  const ctx = await s.begin([messagesOffer]);
  s.meter.onResponseBody!(ctx, { usage: { input_tokens: 10, output_tokens: 5 } }, s.up(messagesOffer));
  s.commit(ctx, messagesOffer);
  const release = s.store.ledger.release;
  s.store.ledger.settle = () => { throw new Error('disk I/O error'); };
  s.store.ledger.release = () => { throw new Error('still failing'); };
  t.throws(() => s.meter.onDone!(ctx, 'ok'), /still failing/);
  t.equal(holdOf(ctx)!.ended, false, 'not marked ended: the ledger never ended it');
  s.store.ledger.release = release;
  await s.hold.onDone!(ctx, 'ok');
  t.equal((await s.store.ledger.balance(s.a.accountId)).held, 0);
  t.same(await checkInvariants(s.store, { noOpenHolds: true }), []);
});

/** The store's ledger answering with promises, as a networked store would. */
function answerWithPromises(ledger: Ledger): void {
  const { reserve, settle, release } = ledger;
  ledger.reserve = (req) => new Promise((resolve) => setImmediate(() => resolve(reserve.call(ledger, req))));
  ledger.settle = (id, charge) => new Promise((resolve) => setImmediate(() => resolve(settle.call(ledger, id, charge))));
  ledger.release = (id) => new Promise((resolve) => setImmediate(() => resolve(release.call(ledger, id))));
}

t.test('a ledger that answers with promises: the same hold, charge and history row', async (t) => {
  const s = await setup(t);
  answerWithPromises(s.store.ledger);
  const ctx = s.contextFor([messagesOffer]);
  const reserving = s.hold.onRequest!(ctx);
  t.ok(reserving instanceof Promise, 'budget-hold waits for the reserve');
  await reserving;
  t.equal(holdOf(ctx)!.amount, 2000 * 3750 + 1000 * 15000);
  s.meter.onResponseBody!(ctx, { usage: { input_tokens: 100, output_tokens: 50 } }, s.up(messagesOffer));
  s.commit(ctx, messagesOffer);
  const settling = s.meter.onDone!(ctx, 'ok');
  t.ok(settling instanceof Promise, 'metering waits for the settle');
  t.equal(holdOf(ctx)!.ended, false, 'not ended before the ledger says so');
  await settling;
  t.equal(holdOf(ctx)!.ended, true);
  await s.hold.onDone!(ctx, 'ok');
  t.equal(await s.spent(), 100 * 3000 + 50 * 15000);
  t.match(await s.store.history.get(ctx.id), { status: 'ok', costNano: 100 * 3000 + 50 * 15000 });
  t.same(await checkInvariants(s.store, { noOpenHolds: true }), []);
});

t.test('a ledger that answers with promises: a failed settle is released, recorded and reported; a failed release is left to budget-hold', async (t) => {
  const s = await setup(t);
  const settled = await s.begin([messagesOffer]);
  const unreleased = await s.begin([messagesOffer]);
  for (const ctx of [settled, unreleased]) {
    s.meter.onResponseBody!(ctx, { usage: { input_tokens: 10, output_tokens: 5 } }, s.up(messagesOffer));
    s.commit(ctx, messagesOffer);
  }
  answerWithPromises(s.store.ledger);
  const release = s.store.ledger.release;
  s.store.ledger.settle = () => Promise.reject(new Error('connection reset'));
  await t.rejects(s.meter.onDone!(settled, 'ok') as Promise<void>, /connection reset/);
  t.equal(holdOf(settled)!.ended, true, 'released instead');
  t.match(await s.store.history.get(settled.id), { status: 'ok', costNano: 0 });

  s.store.ledger.release = () => Promise.reject(new Error('still failing'));
  await t.rejects(s.meter.onDone!(unreleased, 'ok') as Promise<void>, /still failing/);
  t.equal(holdOf(unreleased)!.ended, false, 'not marked ended: the ledger never ended it');
  s.store.ledger.release = release;
  await s.hold.onDone!(unreleased, 'ok');
  t.equal(holdOf(unreleased)!.ended, true);
  t.equal((await s.store.ledger.balance(s.a.accountId)).held, 0);
  t.same(await checkInvariants(s.store, { noOpenHolds: true }), []);
});

t.test('count_tokens: no history row when it succeeds, one when it fails', async (t) => {
  const s = await setup(t);
  const countCtx = (route: Route) => s.begin([messagesOffer], { route });
  const ok = await countCtx('count_tokens');
  t.equal(holdOf(ok), undefined, 'no hold for a token count');
  t.equal((await s.end(ok, 'ok')).row, null);
  const failed = await countCtx('count_tokens');
  failed.error = new GatewayError(404, 'not_found_error', 'model_not_found', 'Unknown model');
  failed.status = 404;
  t.match((await s.end(failed, 'error')).row, { route: 'count_tokens', status: 'error', httpStatus: 404 });
});

t.test('requests without a valid key leave no row', async (t) => {
  const s = await setup(t);
  const ctx = await s.begin([messagesOffer], { auth: undefined });
  t.equal((await s.end(ctx, 'error')).row, null);
});

t.test('usage reported as zeros beside real output is not trusted', async (t) => {
  const s = await setup(t);
  const { ctx } = await s.stream(messagesOffer, [
    msg('message_start', { message: { usage: { input_tokens: 0, output_tokens: 0 } } }),
    msg('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Some words were produced here' } }),
    msg('message_delta', { delta: {}, usage: { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0 } }),
  ], 'ok');
  t.same(ctx.usage, { input: 2000, output: countTextTokens('Some words were produced here'), cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 });
  const empty = await s.whole(messagesOffer, { content: [], usage: { input_tokens: 7, output_tokens: 0 } });
  t.same(empty.ctx.usage, { input: 7, output: 0, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 }, 'a real empty answer costs no output');
});
