import t, { type Test } from 'tap';
import Database from 'better-sqlite3';
import type { StoreOptions } from '../../../lib/store/index.js';
import budgetHold, { asksOneHourCache } from '../../../plugins/budget-hold/index.js';
import { holdOf } from '../../../plugins/budget-hold/hold.js';
import { GatewayError } from '../../../lib/errors.js';
import type { RequestContext } from '../../../lib/context.js';
import { checkInvariants } from '../../helpers/invariants.js';
import { pluginEnv, requestContext, seedAccount, tempStore, testOffer } from '../../lib/store/fixtures/store.js';

const USD = 1_000_000_000;
/** A request that asks for the 1-hour cache TTL. */
const ONE_HOUR = { messages: [{ role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral', ttl: '1h' } }] }] };
// Max input price 4 $/M (4000 nano/token) from one offer, max output 16 $/M (16000) from another
// (1-hour cache writes priced as input here; their own default is tested below).
const offers = [
  testOffer('m@cheap', 'messages', { input: 3, output: 16, cache_write_1h: 3 }),
  testOffer('m@dear', 'chat', { input: 4, output: 12 }),
];

async function setup(t: Test, creditNano: number, monthlyLimitNano: number | null = null, storeOptions: StoreOptions = {}) {
  const ts = tempStore(t, storeOptions);
  const a = await seedAccount(ts.store, creditNano, { monthlyLimitNano });
  const plugin = budgetHold(pluginEnv(ts.store, ts.config));
  const ctxFor = (over: Partial<RequestContext> = {}) => requestContext({
    route: 'messages', candidates: offers, estimatedInputTokens: 1000, outputBudget: 500,
    auth: { accountId: a.accountId, keyId: a.keyId, keyAllowedModels: null, monthlyLimitNano,
      routing: { allow: null, deny: [], priceCapInput: null, priceCapOutput: null } },
    ...over,
  });
  const refusal = async (ctx: RequestContext) => {
    try {
      await plugin.onRequest!(ctx);
    } catch (err) {
      if (err instanceof GatewayError) return err;
      throw err;
    }
    throw new Error('admitted');
  };
  return { ...ts, a, plugin, ctxFor, refusal };
}

t.test('the hold is estimated input × max input price + output budget × max output price', async (t) => {
  const { store, a, plugin, ctxFor } = await setup(t, 1 * USD);
  const ctx = ctxFor();
  await plugin.onRequest!(ctx);
  const want = 1000 * 4000 + 500 * 16000;
  t.match(holdOf(ctx), { amount: want, ended: false });
  t.equal((await store.ledger.balance(a.accountId)).held, want);
  await plugin.onDone!(ctx, 'error');
  t.equal(holdOf(ctx)!.ended, true);
  t.equal((await store.ledger.balance(a.accountId)).held, 0, 'onDone releases a hold nobody settled');
  t.same(await checkInvariants(store, { noOpenHolds: true }), []);
});

t.test('input is priced at the dearest of input, cache write and cache read: the hold stays an upper bound', async (t) => {
  const { plugin, ctxFor } = await setup(t, 1 * USD);
  const cached = [
    testOffer('m@write', 'messages', { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75, cache_write_1h: 3.9 }),
    testOffer('m@read', 'chat', { input: 1, output: 4, cache_read: 2 }),
  ];
  const ctx = ctxFor({ candidates: cached, body: ONE_HOUR });
  await plugin.onRequest!(ctx);
  t.equal(holdOf(ctx)!.amount, 1000 * 3900 + 500 * 15000, 'a prompt written to the 1-hour cache at 3.9 $/M');
  await plugin.onDone!(ctx, 'error');
});

t.test('1-hour cache writes: their price covers the hold, at 2× input when the config has none', async (t) => {
  const { plugin, ctxFor } = await setup(t, 1 * USD);
  const hold = async (candidates: typeof offers, body: Record<string, any> = ONE_HOUR) => {
    const ctx = ctxFor({ candidates, body });
    await plugin.onRequest!(ctx);
    await plugin.onDone!(ctx, 'error');
    return holdOf(ctx)!.amount;
  };
  t.equal(await hold([testOffer('m@w', 'messages', { input: 3, output: 15, cache_write: 3.75 })]), 1000 * 6000 + 500 * 15000,
    'no cache_write_1h: the vendor\'s 2 × input');
  t.equal(await hold([testOffer('m@w', 'messages', { input: 3, output: 15, cache_write: 3.75, cache_write_1h: 7 })]), 1000 * 7000 + 500 * 15000);
  t.equal(await hold([testOffer('m@c', 'chat', { input: 3, output: 15, cache_write: 3.75 })]), 1000 * 3750 + 500 * 15000,
    'a chat-format upstream reports no 1-hour writes: its hold is not raised for them');
  t.equal(await hold([testOffer('m@w', 'messages', { input: 3, output: 15, cache_write: 3.75 })], { messages: [{ role: 'user', content: 'hi' }] }),
    1000 * 3750 + 500 * 15000, 'a request that asks for no 1-hour TTL cannot be billed 1-hour writes');
});

t.test('asksOneHourCache finds the 1-hour TTL wherever a cache_control may be', async (t) => {
  const c = { cache_control: { type: 'ephemeral', ttl: '1h' } };
  const cases: Record<string, any> = {
    'top level': { ...c, messages: [] },
    system: { system: [{ type: 'text', text: 's', ...c }], messages: [] },
    tools: { tools: [{ name: 'f', input_schema: {}, ...c }], messages: [] },
    'message block': { messages: [{ role: 'user', content: [{ type: 'text', text: 'x', ...c }] }] },
    'tool result block': { messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'text', text: 'x', ...c }] }] }] },
  };
  for (const [name, body] of Object.entries(cases)) t.ok(asksOneHourCache(body), name);
  t.notOk(asksOneHourCache({ messages: [{ role: 'user', content: [{ type: 'text', text: 'ttl 1h', cache_control: { type: 'ephemeral', ttl: '5m' } }] }], system: 'x' }));
});

t.test('a hold whose release fails stays open for the next try', async (t) => {
  const { store, a, plugin, ctxFor } = await setup(t, 1 * USD);
  const ctx = ctxFor();
  await plugin.onRequest!(ctx);
  const release = store.ledger.release;
  store.ledger.release = () => { throw new Error('disk I/O error'); };
  t.throws(() => plugin.onDone!(ctx, 'error'), /disk I\/O error/);
  t.equal(holdOf(ctx)!.ended, false, 'not marked ended');
  store.ledger.release = release;
  await plugin.onDone!(ctx, 'error');
  t.equal(holdOf(ctx)!.ended, true);
  t.equal((await store.ledger.balance(a.accountId)).held, 0);
});

t.test('no hold for count_tokens, models, or a request with no candidates', async (t) => {
  const { store, a, plugin, ctxFor } = await setup(t, 1 * USD);
  for (const ctx of [ctxFor({ route: 'count_tokens' }), ctxFor({ route: 'models' }), ctxFor({ candidates: [] })]) {
    await plugin.onRequest!(ctx);
    t.equal(holdOf(ctx), undefined, ctx.route);
    await plugin.onDone!(ctx, 'ok');
  }
  t.equal((await store.ledger.balance(a.accountId)).held, 0);
});

t.test('402 names the reason: not enough credit', async (t) => {
  const { plugin, ctxFor, refusal } = await setup(t, 20_000_000);
  const first = ctxFor();
  await plugin.onRequest!(first); // 12_000_000 of 20_000_000 held
  const err = await refusal(ctxFor());
  t.match(err, { status: 402, type: 'billing_error', code: 'insufficient_credit', message: /Not enough credit.*\$0\.012.*\$0\.008.*Add credits/ });
  await plugin.onDone!(first, 'ok');
});

t.test('402 names the reason: the monthly limit', async (t) => {
  const { store, plugin, ctxFor, refusal } = await setup(t, 100 * USD, 20_000_000);
  const first = ctxFor();
  await plugin.onRequest!(first);
  await store.ledger.settle(holdOf(first)!.id, 10_000_000);
  holdOf(first)!.ended = true;
  const err = await refusal(ctxFor());
  t.match(err, { status: 402, code: 'monthly_limit_reached', message: /monthly limit of \$0\.02 is reached.*\$0\.01 spent/ });
});

t.test('402 names the reason: the hold for this output budget is too large', async (t) => {
  const { ctxFor, refusal } = await setup(t, 10_000_000, 5 * USD);
  t.match(await refusal(ctxFor()), {
    status: 402, code: 'hold_too_large', param: 'max_tokens',
    message: /hold for this request's output budget \(500 tokens: \$0\.012\).*balance of \$0\.01.*Lower max_tokens/,
  }, 'above the whole balance');
  const rich = await setup(t, 100 * USD, 5 * USD);
  t.match(await rich.refusal(rich.ctxFor({ route: 'chat', clientFormat: 'chat', body: { max_completion_tokens: 500 }, outputBudget: 500_000 })), {
    code: 'hold_too_large', param: 'max_completion_tokens', message: /monthly limit of \$5\.00.*Lower max_completion_tokens/,
  }, 'above the monthly limit');
  t.match(await refusal(ctxFor({ outputBudget: Number.MAX_SAFE_INTEGER })), {
    code: 'hold_too_large', message: /more than \$9,007,199/,
  }, 'beyond any integer amount (BigInt math)');
});

t.test('503 with Retry-After while the store cannot write the rows it has queued', async (t) => {
  const { store, a, plugin, ctxFor, refusal, dbPath } = await setup(t, 1 * USD, null, { maxUnwrittenRows: 1, log: () => {} });
  const lock = new Database(dbPath);
  t.teardown(() => lock.close());
  lock.exec('BEGIN IMMEDIATE'); // the store's writer thread waits for this lock
  const first = ctxFor();
  await plugin.onRequest!(first);
  const stalled = store.flush(); // the hold's row is in flight, waiting
  t.match(await refusal(ctxFor()), {
    status: 503, type: 'overloaded_error', code: 'billing_unavailable', retryAfter: 5,
    message: /cannot record charges.*Nothing was charged; retry shortly/,
  });
  await plugin.onDone!(first, 'error');
  lock.exec('COMMIT');
  await stalled;
  await store.flush();
  const again = ctxFor();
  await plugin.onRequest!(again);
  t.ok(holdOf(again), 'admitted once the rows are written');
  await plugin.onDone!(again, 'error');
  t.equal((await store.ledger.balance(a.accountId)).held, 0);
  t.same(await checkInvariants(store, { noOpenHolds: true }), []);
});
