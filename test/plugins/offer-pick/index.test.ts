// offer-pick: model lookup (aliases included), permissions (403 naming the list), price cap (503),
// cheapest-first ordering, output ceilings, features, context window, output budgets, and
// GET /v1/models (paged in the messages shape) and GET /v1/models/{id}.
import t, { type Test } from 'tap';
import offerPick, { SUBSCRIPTION_MIN_OUTPUT, budgetParam, offerOutputBudget } from '../../../plugins/offer-pick/index.js';
import { parseConfig } from '../../../lib/config.js';
import { resolveOffers } from '../../../lib/offers.js';
import { GatewayError } from '../../../lib/errors.js';
import { estimateInputTokens } from '../../../lib/tokens.js';
import { modelRefusal, usableOffers, withinPriceCap } from '../../../lib/permissions.js';
import type { IncomingMessage } from 'node:http';
import { createContext, type AuthInfo, type RequestContext, type Route } from '../../../lib/context.js';
import type { WireFormat } from '../../../lib/config-types.js';

interface OfferSpec {
  listing: string;
  model?: string;
  input: number;
  output: number;
  max?: number;
  subscription?: boolean;
  supports?: Record<string, boolean>;
  /** The provider's wire format (default messages). */
  format?: WireFormat;
}

const MODELS = [
  { id: 'acme/big', display_name: 'Acme Big', context_window: 100_000, max_output_tokens: 8000, created: '2024-05-01T12:00:00Z', aliases: ['big-latest', 'vendor-big-2025'] },
  { id: 'acme/small', context_window: 2000, max_output_tokens: 1000 },
  { id: 'plain', context_window: 100_000, max_output_tokens: 4000 },
  { id: 'acme/empty', context_window: 1000, max_output_tokens: 100 },
];

/** A plugin over these offers (model acme/big unless given). */
function setup(offers: OfferSpec[]) {
  const config = parseConfig(
    JSON.stringify({
      providers: [
        { id: 'p', format: 'messages', base_url: 'https://api.example.com' },
        { id: 'c', format: 'chat', base_url: 'https://chat.example.com/v1' },
      ],
      models: MODELS,
      offers: offers.map((o) => ({
        listing: o.listing,
        model: o.model ?? 'acme/big',
        provider: o.format === 'chat' ? 'c' : 'p',
        upstream_model: `up-${o.listing}`,
        price: { input: o.input, output: o.output },
        ...(o.max !== undefined ? { max_output_tokens: o.max } : {}),
        ...(o.subscription !== undefined ? { subscription: o.subscription } : {}),
        ...(o.supports ? { supports: o.supports } : {}),
      })),
    }),
    'offer-pick-test.json',
    {},
  );
  const offersByModel = resolveOffers(config);
  return { plugin: offerPick({ config, offersByModel }), offersByModel };
}

function ctxFor(body: Record<string, any>, opts: { route?: Route; format?: WireFormat; auth?: AuthInfo; url?: string; modelPath?: string } = {}): RequestContext {
  const route = opts.route ?? 'messages';
  return createContext({
    id: 'req_test',
    route,
    clientFormat: opts.format ?? (route === 'chat' ? 'chat' : 'messages'),
    req: { url: opts.url } as IncomingMessage,
    body,
    auth: opts.auth,
    modelPath: opts.modelPath,
  });
}

function auth(over: Partial<Omit<AuthInfo, 'routing'>> & { routing?: Partial<AuthInfo['routing']> } = {}): AuthInfo {
  return {
    accountId: 1,
    keyId: 1,
    keyAllowedModels: null,
    monthlyLimitNano: null,
    ...over,
    routing: { allow: null, deny: [], priceCapInput: null, priceCapOutput: null, ...over.routing },
  };
}

/** A one-page PDF. */
const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Pages /Kids [2 0 R] /Count 1 >> endobj\n2 0 obj << /Type /Page /Parent 1 0 R >> endobj\n%%EOF\n').toString('base64');
const user = (text = 'Hello') => ({ role: 'user', content: text });
const msgBody = (extra: Record<string, any> = {}) => ({ model: 'acme/big', max_tokens: 100, messages: [user()], ...extra });
const chatBody = (extra: Record<string, any> = {}) => ({ model: 'acme/big', messages: [user()], ...extra });

/** Run onRequest; return the GatewayError it threw (or fail). */
function refusal(t: Test, plugin: ReturnType<typeof setup>['plugin'], ctx: RequestContext): GatewayError {
  try {
    plugin.onRequest!(ctx);
  } catch (e) {
    t.type(e, GatewayError);
    return e as GatewayError;
  }
  t.fail('the request was accepted');
  return new GatewayError(500, 'api_error', 'none', 'none');
}

const pick = (plugin: ReturnType<typeof setup>['plugin'], ctx: RequestContext) => {
  plugin.onRequest!(ctx);
  return ctx.candidates.map((o) => o.listing);
};

const TWO = [
  { listing: 'a', input: 1, output: 10 },
  { listing: 'b', input: 2, output: 5 },
];

t.test('unknown model → 404 naming it', async (t) => {
  const { plugin } = setup(TWO);
  const err = refusal(t, plugin, ctxFor(msgBody({ model: 'acme/nope' })));
  t.match(err, { status: 404, type: 'not_found_error', code: 'model_not_found', message: /"acme\/nope".*GET \/v1\/models/ });
});

t.test('permissions → 403 naming the list that refused', async (t) => {
  const { plugin } = setup(TWO);
  const cases: [string, AuthInfo, RegExp][] = [
    ['key allowed list', auth({ keyAllowedModels: ['plain'] }), /API key's allowed models \(plain\)/],
    ['empty key allowed list', auth({ keyAllowedModels: [] }), /API key's allowed models \(none\)/],
    ['routing allow list', auth({ routing: { allow: ['plain'] } }), /routing allowed-models list/],
    ['routing deny list', auth({ routing: { deny: ['acme/big'] } }), /routing denied-models list/],
    ['deny wins over allow', auth({ keyAllowedModels: ['acme/big'], routing: { allow: ['acme/big'], deny: ['acme/big'] } }), /denied-models/],
  ];
  for (const [name, a, message] of cases) {
    const err = refusal(t, plugin, ctxFor(msgBody(), { auth: a }));
    t.match(err, { status: 403, type: 'permission_error', code: 'model_not_permitted', message }, name);
    t.match(err.message, /acme\/big/, `${name}: names the model`);
  }
  t.same(pick(plugin, ctxFor(msgBody(), { auth: auth({ keyAllowedModels: ['acme/big'], routing: { allow: ['acme/big'], deny: ['plain'] } }) })), ['b', 'a'], 'listed everywhere: allowed');
  t.same(pick(plugin, ctxFor(msgBody(), { auth: undefined })), ['b', 'a'], 'no auth plugin: no restriction');
});

t.test('permissions: unit checks of lib/permissions', async (t) => {
  const { offersByModel } = setup(TWO);
  const [a, b] = offersByModel.get('acme/big')!;
  t.equal(modelRefusal(undefined, 'x'), null);
  t.equal(modelRefusal(auth(), 'x'), null);
  t.equal(withinPriceCap(auth({ routing: { priceCapInput: 1000, priceCapOutput: 10_000 } }), a), true, 'caps equal to the price are within');
  t.equal(withinPriceCap(auth({ routing: { priceCapInput: 999 } }), a), false);
  t.equal(withinPriceCap(auth({ routing: { priceCapOutput: 9999 } }), a), false);
  t.same(usableOffers(auth({ routing: { priceCapOutput: 5000 } }), 'acme/big', [a, b]), [b]);
  t.same(usableOffers(auth({ routing: { deny: ['acme/big'] } }), 'acme/big', [a, b]), []);
});

t.test('price cap: offers above it are dropped; none left → 503 naming the price cap', async (t) => {
  const { plugin } = setup(TWO);
  t.same(pick(plugin, ctxFor(msgBody(), { auth: auth({ routing: { priceCapInput: 1000 } }) })), ['a'], 'input cap (1 USD/M = 1000 nano)');
  t.same(pick(plugin, ctxFor(msgBody(), { auth: auth({ routing: { priceCapOutput: 5000 } }) })), ['b'], 'output cap');
  const err = refusal(t, plugin, ctxFor(msgBody(), { auth: auth({ routing: { priceCapInput: 1000, priceCapOutput: 5000 } }) }));
  t.match(err, { status: 503, type: 'overloaded_error', code: 'no_usable_offer', message: /price cap/ });
  t.ok(err.retryAfter! >= 1, `retryAfter ${err.retryAfter}`);
});

t.test('a model without offers → 503', async (t) => {
  const { plugin } = setup(TWO);
  const err = refusal(t, plugin, ctxFor(msgBody({ model: 'acme/empty', max_tokens: 10 })));
  t.match(err, { status: 503, code: 'no_usable_offer', message: /acme\/empty has no offers/ });
  t.ok(err.retryAfter! >= 1);
});

t.test('cheapest first: estimated input × input price + output budget × output price', async (t) => {
  const { plugin } = setup(TWO);
  // a: 1000 in / 10000 out; b: 2000 in / 5000 out (nano per token).
  // Short input, large budget: b is cheaper. a = in*1000 + 4000*10000, b = in*2000 + 4000*5000.
  const short = ctxFor(msgBody({ max_tokens: 4000 }));
  t.same(pick(plugin, short), ['b', 'a']);
  // Long input, small budget: a is cheaper.
  const long = ctxFor(msgBody({ max_tokens: 1, messages: [user('lorem ipsum dolor sit amet '.repeat(200))] }));
  t.same(pick(plugin, long), ['a', 'b']);
  // The crossing point follows the formula exactly: cost(a) < cost(b) ⇔ 5000·budget < 1000·input.
  const body = msgBody({ messages: [user('lorem ipsum dolor sit amet '.repeat(20))] });
  const input = estimateInputTokens(body, 'messages');
  const cross = input / 5; // equal cost at budget = input / 5
  const below = ctxFor({ ...body, max_tokens: Math.floor(cross) - 1 });
  const above = ctxFor({ ...body, max_tokens: Math.ceil(cross) + 1 });
  t.same(pick(plugin, below), ['a', 'b'], `budget ${Math.floor(cross) - 1} < ${cross}`);
  t.same(pick(plugin, above), ['b', 'a'], `budget ${Math.ceil(cross) + 1} > ${cross}`);
  t.equal(below.estimatedInputTokens, input, 'the estimate is kept on the context');
});

t.test('equal costs keep the config order', async (t) => {
  const { plugin } = setup([
    { listing: 'x', input: 1, output: 1 },
    { listing: 'y', input: 1, output: 1 },
    { listing: 'z', input: 0.5, output: 1 },
  ]);
  t.same(pick(plugin, ctxFor(msgBody())), ['z', 'x', 'y']);
});

t.test('offers whose output ceiling is below the budget are skipped', async (t) => {
  const { plugin } = setup([
    { listing: 'cheap-small', input: 0.1, output: 0.1, max: 500 },
    { listing: 'dear-large', input: 5, output: 20 },
  ]);
  t.same(pick(plugin, ctxFor(msgBody({ max_tokens: 500 }))), ['cheap-small', 'dear-large'], 'at the ceiling: fits');
  t.same(pick(plugin, ctxFor(msgBody({ max_tokens: 501 }))), ['dear-large']);
});

t.test('no offer allows the budget → 400 saying what to lower and to how much', async (t) => {
  const { plugin } = setup([
    { listing: 'a', input: 1, output: 1, max: 500 },
    { listing: 'b', input: 1, output: 1, max: 700 },
  ]);
  const m = refusal(t, plugin, ctxFor(msgBody({ max_tokens: 701 })));
  t.match(m, { status: 400, type: 'invalid_request_error', code: 'output_limit_exceeded', param: 'max_tokens', message: /lower max_tokens to 700 or less/ });
  const c1 = refusal(t, plugin, ctxFor(chatBody({ max_completion_tokens: 800 }), { route: 'chat' }));
  t.match(c1, { status: 400, code: 'output_limit_exceeded', param: 'max_completion_tokens', message: /max_completion_tokens .*700/ });
  const c2 = refusal(t, plugin, ctxFor(chatBody({ max_tokens: 800 }), { route: 'chat' }));
  t.match(c2, { status: 400, code: 'output_limit_exceeded', param: 'max_tokens' });
});

t.test('chat output budget: max_completion_tokens, then max_tokens, then the model maximum', async (t) => {
  const { plugin } = setup(TWO);
  const both = ctxFor(chatBody({ max_completion_tokens: 300, max_tokens: 50 }), { route: 'chat' });
  pick(plugin, both);
  t.equal(both.outputBudget, 300, 'max_completion_tokens wins');
  const old = ctxFor(chatBody({ max_tokens: 50 }), { route: 'chat' });
  pick(plugin, old);
  t.equal(old.outputBudget, 50);
  const none = ctxFor(chatBody(), { route: 'chat' });
  pick(plugin, none);
  t.equal(none.outputBudget, 8000, 'the model maximum');
});

t.test('messages output budget is max_tokens', async (t) => {
  const { plugin } = setup(TWO);
  const ctx = ctxFor(msgBody({ max_tokens: 123 }));
  pick(plugin, ctx);
  t.equal(ctx.outputBudget, 123);
});

t.test('count_tokens uses an output budget of 1', async (t) => {
  const { plugin } = setup([{ listing: 'a', input: 1, output: 1, max: 10 }]);
  const ctx = ctxFor({ model: 'acme/big', messages: [user()] }, { route: 'count_tokens' });
  t.same(pick(plugin, ctx), ['a']);
  t.equal(ctx.outputBudget, 1);
  const big = ctxFor({ model: 'acme/big', max_tokens: 999_999, messages: [user()] }, { route: 'count_tokens' });
  pick(plugin, big);
  t.equal(big.outputBudget, 1, 'a max_tokens in the body does not count');
});

t.test('subscription-backed offers: minimum effective budget of 16', async (t) => {
  t.equal(SUBSCRIPTION_MIN_OUTPUT, 16);
  const { plugin } = setup([{ listing: 'sub', input: 1, output: 1, subscription: true }]);
  const small = ctxFor(msgBody({ max_tokens: 5 }));
  pick(plugin, small);
  t.equal(small.outputBudget, 16);
  const large = ctxFor(msgBody({ max_tokens: 100 }));
  pick(plugin, large);
  t.equal(large.outputBudget, 100, 'above the minimum: unchanged');
  const counted = ctxFor({ model: 'acme/big', messages: [user()] }, { route: 'count_tokens' });
  pick(plugin, counted);
  t.equal(counted.outputBudget, 16, 'count_tokens through a subscription offer too');
});

t.test('subscription minimum in the ordering and in the budget of a mixed list', async (t) => {
  // Budget 1: sub costs in*1000 + 16*1000; plain costs in*1000 + 1*10000 → plain cheaper.
  const { plugin } = setup([
    { listing: 'sub', input: 1, output: 1, subscription: true },
    { listing: 'plain', input: 1, output: 10 },
  ]);
  const ctx = ctxFor(msgBody({ max_tokens: 1 }));
  t.same(pick(plugin, ctx), ['plain', 'sub']);
  t.equal(ctx.outputBudget, 16, 'the budget covers the largest effective budget among the candidates');
  const plainOnly = setup([{ listing: 'plain', input: 1, output: 10 }]).plugin;
  const c2 = ctxFor(msgBody({ max_tokens: 1 }));
  pick(plainOnly, c2);
  t.equal(c2.outputBudget, 1, 'no subscription offer: no minimum');
});

t.test('context window: estimated input + output budget must fit → 400', async (t) => {
  const { plugin } = setup([{ listing: 's', model: 'acme/small', input: 1, output: 1 }]);
  const body = { model: 'acme/small', max_tokens: 1000, messages: [user('word '.repeat(1000))] };
  const input = estimateInputTokens(body, 'messages');
  t.ok(input + 1000 > 2000, `the fixture overflows (${input} + 1000)`);
  const err = refusal(t, plugin, ctxFor(body));
  t.match(err, { status: 400, type: 'invalid_request_error', code: 'context_window_exceeded', message: new RegExp(`${input} tokens.*1000 tokens.*2000 tokens`) });
  t.match(err.message, /lower max_tokens/);
  const fits = ctxFor({ ...body, max_tokens: 2000 - input });
  t.same(pick(plugin, fits), ['s'], 'exactly the context window fits');
  const chatDefault = refusal(t, plugin, ctxFor({ model: 'acme/small', messages: [user('word '.repeat(1000))] }, { route: 'chat' }));
  t.match(chatDefault, { status: 400, code: 'context_window_exceeded', message: /max_completion_tokens/ }, 'the chat default budget counts too');
  const counted = ctxFor({ model: 'acme/small', messages: [user('word '.repeat(3000))] }, { route: 'count_tokens' });
  t.same(pick(plugin, counted), ['s'], 'count_tokens is not an inference request: a prompt above the window is counted');
  t.ok(counted.estimatedInputTokens > 2000, `estimate ${counted.estimatedInputTokens} is above the window`);
});

t.test('offerOutputBudget: the budget a hold covers on one offer', async (t) => {
  const { offersByModel } = setup([{ listing: 'a', input: 1, output: 1, max: 500 }, { listing: 'sub', input: 1, output: 1, max: 8, subscription: true }]);
  const [a, sub] = offersByModel.get('acme/big')!;
  t.equal(offerOutputBudget(a, 8000, false), 500, 'the default, within the offer ceiling');
  t.equal(offerOutputBudget(a, 300, false), 300);
  t.equal(offerOutputBudget(a, 700, true), 700, 'a client budget as given');
  t.equal(offerOutputBudget(sub, 8000, false), SUBSCRIPTION_MIN_OUTPUT, 'a subscription offer: at least the minimum');
  t.equal(offerOutputBudget(sub, 5, true), SUBSCRIPTION_MIN_OUTPUT);
});

t.test('budgetParam names the field that set the output budget', async (t) => {
  t.equal(budgetParam(ctxFor(chatBody({ max_completion_tokens: 5, max_tokens: 9 }), { route: 'chat' })), 'max_completion_tokens');
  t.equal(budgetParam(ctxFor(chatBody({ max_tokens: 9 }), { route: 'chat' })), 'max_tokens');
  t.equal(budgetParam(ctxFor(chatBody(), { route: 'chat' })), 'max_tokens');
  t.equal(budgetParam(ctxFor(msgBody({ max_completion_tokens: 5 }))), 'max_tokens', 'messages has only max_tokens');
});

t.test('offers lacking a used feature are skipped; none has it → 400 naming it', async (t) => {
  const { plugin } = setup([
    { listing: 'bare', input: 0.1, output: 0.1, supports: { tools: false, images: false, reasoning: false, json_schema: false, documents: false } },
    { listing: 'full', input: 9, output: 9 },
  ]);
  const noneSupports = setup([{ listing: 'bare', input: 1, output: 1, supports: { tools: false, images: false, reasoning: false, json_schema: false, documents: false } }]).plugin;
  const pdf = { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } };
  const file = { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF}`, filename: 'a.pdf' } };
  const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } };
  const cases: [string, RequestContext, () => RequestContext, string, RegExp, string | null][] = [
    [
      'tools',
      ctxFor(msgBody({ tools: [{ name: 'f', input_schema: { type: 'object' } }] })),
      () => ctxFor(msgBody({ tools: [{ name: 'f', input_schema: { type: 'object' } }] })),
      'tools',
      /supports tools/,
      'tools',
    ],
    ['images', ctxFor(msgBody({ messages: [{ role: 'user', content: [image] }] })), () => ctxFor(msgBody({ messages: [{ role: 'user', content: [image] }] })), 'images', /image input/, 'messages[0].content[0]'],
    [
      'documents',
      ctxFor(msgBody({ messages: [{ role: 'user', content: ['x', pdf] }] })),
      () => ctxFor(msgBody({ messages: [{ role: 'user', content: [{ type: 'text', text: 'Read' }, pdf] }] })),
      'documents',
      /^No offer of model acme\/big supports document input \(PDF and text documents, file parts\); remove it from the request\.$/,
      'messages[0].content[1]',
    ],
    [
      'documents (chat file part)',
      ctxFor(chatBody({ messages: [{ role: 'user', content: [file] }] }), { route: 'chat' }),
      () => ctxFor(chatBody({ messages: [{ role: 'user', content: [file] }] }), { route: 'chat' }),
      'documents',
      /supports document input/,
      'messages[0].content[0]',
    ],
    [
      'reasoning (chat)',
      ctxFor(chatBody({ reasoning_effort: 'high' }), { route: 'chat' }),
      () => ctxFor(chatBody({ reasoning_effort: 'high' }), { route: 'chat' }),
      'reasoning',
      /reasoning/,
      null,
    ],
    [
      'json_schema (chat)',
      ctxFor(chatBody({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } }), { route: 'chat' }),
      () => ctxFor(chatBody({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } }), { route: 'chat' }),
      'json_schema',
      /json_schema/,
      null,
    ],
  ];
  for (const [name, ctx, again, feature, message, param] of cases) {
    t.same(pick(plugin, ctx), ['full'], `${name}: the cheaper offer without it is skipped`);
    t.ok(ctx.features.has(feature as any), `${name}: recorded in ctx.features`);
    const err = refusal(t, noneSupports, again());
    t.match(err, { status: 400, type: 'invalid_request_error', code: 'feature_not_supported', message, param }, `${name}: 400`);
  }
  const plainCtx = ctxFor(msgBody());
  t.same(pick(plugin, plainCtx), ['bare', 'full'], 'a request using no feature takes the cheapest');
  t.equal(plainCtx.features.size, 0);
});

t.test('a document only the client\'s own format can carry (by URL, by file id) goes to same-format offers; none → 400 naming it', async (t) => {
  const { plugin } = setup([
    { listing: 'chat-cheap', input: 0.1, output: 0.1, format: 'chat' },
    { listing: 'msg', input: 9, output: 9 },
  ]);
  const byUrl = { type: 'document', source: { type: 'url', url: 'https://x/a.pdf' } };
  t.same(pick(plugin, ctxFor(msgBody({ messages: [{ role: 'user', content: [byUrl] }] }))), ['msg'], 'a PDF by URL: the messages offer only');
  const inline = { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } };
  t.same(pick(plugin, ctxFor(msgBody({ messages: [{ role: 'user', content: [inline] }] }))), ['chat-cheap', 'msg'], 'a base64 PDF converts: cheapest first');
  const chatFileId = { type: 'file', file: { file_id: 'file-abc' } };
  t.same(pick(plugin, ctxFor(chatBody({ messages: [{ role: 'user', content: [chatFileId] }] }), { route: 'chat' })), ['chat-cheap'], 'a chat file id: the chat offer only');

  const chatOnly = setup([{ listing: 'chat', input: 1, output: 1, format: 'chat' }]).plugin;
  const err = refusal(t, chatOnly, ctxFor(msgBody({ messages: [{ role: 'user', content: ['x', { type: 'tool_result', tool_use_id: 't', content: [{ type: 'document', source: { type: 'file', file_id: 'file_1' } }] }] }] })));
  t.match(err, {
    status: 400,
    code: 'feature_not_supported',
    param: 'messages[0].content[1].content[0].source',
    message: /^No offer of model acme\/big can take a document given by file id \(messages\[0\]\.content\[1\]\.content\[0\]\.source\): its offers speak the chat format, which cannot carry it; send the document's content as base64 data instead\.$/,
  });
});

t.test('a document the gateway cannot size is held as filling what the context window leaves (not for a token count)', async (t) => {
  const { plugin } = setup([{ listing: 'a', input: 1, output: 1 }]);
  const byUrl = { type: 'document', source: { type: 'url', url: 'https://x/a.pdf' } };
  const ctx = ctxFor(msgBody({ max_tokens: 1000, messages: [{ role: 'user', content: [byUrl] }] }));
  plugin.onRequest!(ctx);
  t.equal(ctx.estimatedInputTokens, 100_000 - 1000, 'acme/big: 100,000 tokens of context less the output budget');
  const inline = ctxFor(msgBody({ max_tokens: 1000, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } }] }] }));
  plugin.onRequest!(inline);
  t.equal(inline.estimatedInputTokens, estimateInputTokens(inline.body, 'messages'), 'a PDF it can read is held at its pages');
  t.ok(inline.estimatedInputTokens < 5000);
  const count = ctxFor({ model: 'acme/big', messages: [{ role: 'user', content: [byUrl] }] }, { route: 'count_tokens' });
  plugin.onRequest!(count);
  t.equal(count.estimatedInputTokens, estimateInputTokens(count.body, 'messages'), 'count_tokens: the estimate as it is');
});

t.test('GET /v1/models, chat shape, filtered by permissions and price cap', async (t) => {
  const { plugin } = setup([
    { listing: 'big', input: 1, output: 1 },
    { listing: 'small', model: 'acme/small', input: 50, output: 50 },
    { listing: 'plain', model: 'plain', input: 1, output: 1 },
  ]);
  const all = ctxFor({}, { route: 'models', format: 'chat' });
  plugin.onRequest!(all);
  t.same(all.reply, {
    status: 200,
    body: {
      object: 'list',
      data: [
        { id: 'acme/big', object: 'model', created: Date.parse('2024-05-01T12:00:00Z') / 1000, owned_by: 'acme' },
        { id: 'acme/small', object: 'model', created: Date.parse('2025-01-01T00:00:00Z') / 1000, owned_by: 'acme' },
        { id: 'plain', object: 'model', created: Date.parse('2025-01-01T00:00:00Z') / 1000, owned_by: 'gateway' },
      ],
    },
  }, 'models without offers (acme/empty) are not listed');
  t.same(all.candidates, [], 'no offer is picked for the models route');
  const ids = (a: AuthInfo) => {
    const ctx = ctxFor({}, { route: 'models', format: 'chat', auth: a });
    plugin.onRequest!(ctx);
    return (ctx.reply!.body as any).data.map((m: any) => m.id);
  };
  t.same(ids(auth({ keyAllowedModels: ['plain', 'acme/empty'] })), ['plain'], 'key allowed list');
  t.same(ids(auth({ routing: { allow: ['acme/big', 'plain'] } })), ['acme/big', 'plain'], 'routing allow list');
  t.same(ids(auth({ routing: { deny: ['plain'] } })), ['acme/big', 'acme/small'], 'routing deny list');
  t.same(ids(auth({ routing: { priceCapInput: 10_000 } })), ['acme/big', 'plain'], 'price cap hides acme/small');
});

/** The vendor's ModelInfo fields the gateway has no value for, or one for every model. */
const VENDOR_FIELDS = { lifecycle: 'active', deprecated_at: null, retires_at: null, line: null, capabilities: null };

t.test('GET /v1/models, messages shape', async (t) => {
  const { plugin } = setup([
    { listing: 'big', input: 1, output: 1 },
    { listing: 'plain', model: 'plain', input: 1, output: 1 },
  ]);
  const ctx = ctxFor({}, { route: 'models', format: 'messages' });
  plugin.onRequest!(ctx);
  t.same(ctx.reply, {
    status: 200,
    body: {
      data: [
        { type: 'model', id: 'acme/big', display_name: 'Acme Big', created_at: '2024-05-01T12:00:00Z', ...VENDOR_FIELDS, max_input_tokens: 100_000, max_tokens: 8000 },
        { type: 'model', id: 'plain', display_name: 'plain', created_at: '2025-01-01T00:00:00Z', ...VENDOR_FIELDS, max_input_tokens: 100_000, max_tokens: 4000 },
      ],
      has_more: false,
      first_id: 'acme/big',
      last_id: 'plain',
    },
  });
  const none = ctxFor({}, { route: 'models', format: 'messages', auth: auth({ keyAllowedModels: [] }) });
  plugin.onRequest!(none);
  t.same(none.reply!.body, { data: [], has_more: false, first_id: null, last_id: null }, 'nothing allowed: an empty list');
});

t.test('GET /v1/models, messages shape, paged as the vendor pages: limit, after_id, before_id', async (t) => {
  const ids = Array.from({ length: 25 }, (_, i) => `m/${String(i).padStart(2, '0')}`);
  const config = parseConfig(
    JSON.stringify({
      providers: [{ id: 'p', format: 'messages', base_url: 'https://api.example.com' }],
      models: ids.map((id) => ({ id, context_window: 1000, max_output_tokens: 100, ...(id === 'm/03' ? { aliases: ['three'] } : {}) })),
      offers: ids.map((id) => ({ listing: id, model: id, provider: 'p', upstream_model: id, price: { input: 1, output: 1 } })),
    }),
    'paging-test.json',
    {},
  );
  const plugin = offerPick({ config, offersByModel: resolveOffers(config) });
  const page = (query: string, a?: AuthInfo) => {
    const ctx = ctxFor({}, { route: 'models', format: 'messages', url: `/v1/models${query}`, auth: a });
    plugin.onRequest!(ctx);
    const body = ctx.reply!.body as any;
    return { ids: body.data.map((m: any) => m.id), has_more: body.has_more, first_id: body.first_id, last_id: body.last_id };
  };
  const range = (from: number, to: number) => ids.slice(from, to);
  t.same(page(''), { ids: range(0, 20), has_more: true, first_id: 'm/00', last_id: 'm/19' }, 'the vendor\'s default page: 20');
  t.same(page('?after_id=m/19'), { ids: range(20, 25), has_more: false, first_id: 'm/20', last_id: 'm/24' }, 'the next page');
  t.same(page('?limit=5&after_id=m%2F04'), { ids: range(5, 10), has_more: true, first_id: 'm/05', last_id: 'm/09' }, 'a percent-encoded cursor');
  t.same(page('?limit=5&before_id=m/10'), { ids: range(5, 10), has_more: true, first_id: 'm/05', last_id: 'm/09' }, 'the page before a first_id');
  t.same(page('?limit=5&before_id=m/03'), { ids: range(0, 3), has_more: false, first_id: 'm/00', last_id: 'm/02' }, 'the first page, backwards');
  t.same(page('?limit=1000'), { ids, has_more: false, first_id: 'm/00', last_id: 'm/24' });
  t.same(page('?limit=3&after_id=three'), { ids: range(4, 7), has_more: true, first_id: 'm/04', last_id: 'm/06' }, 'a cursor may be an alias');
  t.same(page('?after_id=m/24'), { ids: [], has_more: false, first_id: null, last_id: null }, 'past the end: an empty page');
  t.same(page('?lifecycle[]=active&lifecycle[]=deprecated&limit=2'), { ids: range(0, 2), has_more: true, first_id: 'm/00', last_id: 'm/01' });
  t.same(page('?lifecycle[]=retired'), { ids: [], has_more: false, first_id: null, last_id: null }, 'every model is active');
  t.same(page('?limit=2', auth({ keyAllowedModels: ['m/07', 'm/08', 'm/09'] })), { ids: ['m/07', 'm/08'], has_more: true, first_id: 'm/07', last_id: 'm/08' }, 'pages of what the key may use');
  const bad = (query: string) => {
    try {
      page(query);
    } catch (e) {
      return { status: (e as GatewayError).status, param: (e as GatewayError).param, message: (e as GatewayError).message };
    }
    return undefined;
  };
  for (const limit of ['0', '1001', 'x', '1.5', '-1', ''])
    t.match(bad(`?limit=${limit}`), { status: 400, param: 'limit', message: /limit: must be an integer from 1 to 1000/ }, `limit=${limit}`);
  t.match(bad('?after_id=m/01&before_id=m/05'), { status: 400, message: /after_id or before_id, not both/ });
  t.match(bad('?after_id=nope'), { status: 400, param: 'after_id', message: /no model "nope"/ });
  t.match(bad('?before_id=m/09', ), undefined, 'a listed cursor is fine');
  t.match(bad('?limit=2&after_id=m/01'), undefined);
  t.match(page('?limit=2&after_id=m/01', auth({ keyAllowedModels: ['m/01', 'm/05'] })).ids, ['m/05']);
  t.match(bad('?lifecycle=gone'), { status: 400, param: 'lifecycle' });
  // The chat shape is one whole list, as OpenAI's: the paging parameters are not read.
  const chat = ctxFor({}, { route: 'models', format: 'chat', url: '/v1/models?limit=0' });
  plugin.onRequest!(chat);
  t.equal((chat.reply!.body as any).data.length, 25);
});

t.test('GET /v1/models/{id}: the listed item, by id (encoded or not) or alias; the vendor\'s 404 otherwise', async (t) => {
  const { plugin } = setup([
    { listing: 'big', input: 1, output: 1 },
    { listing: 'small', model: 'acme/small', input: 50, output: 50 },
  ]);
  const get = (path: string, format: WireFormat, a?: AuthInfo) => {
    const ctx = ctxFor({}, { route: 'models', format, modelPath: path, auth: a });
    plugin.onRequest!(ctx);
    return ctx;
  };
  const big = { type: 'model', id: 'acme/big', display_name: 'Acme Big', created_at: '2024-05-01T12:00:00Z', ...VENDOR_FIELDS, max_input_tokens: 100_000, max_tokens: 8000 };
  for (const path of ['acme/big', 'acme%2Fbig', 'acme%2fbig']) {
    const ctx = get(path, 'messages');
    t.same(ctx.reply, { status: 200, body: big }, path);
    t.equal(ctx.model?.id, 'acme/big', 'history names the model looked up');
    t.equal(ctx.requestedModel, undefined);
  }
  t.same(get('acme%2Fbig', 'chat').reply!.body, { id: 'acme/big', object: 'model', created: Date.parse('2024-05-01T12:00:00Z') / 1000, owned_by: 'acme' });
  const byAlias = get('vendor-big-2025', 'messages');
  t.same(byAlias.reply!.body, big, 'an alias answers with the model it names, as the vendor resolves its aliases');
  t.equal(byAlias.requestedModel, 'vendor-big-2025', 'history keeps the alias asked');
  t.same(get('acme/small', 'chat').reply!.body, { id: 'acme/small', object: 'model', created: Date.parse('2025-01-01T00:00:00Z') / 1000, owned_by: 'acme' });

  const refused = (path: string, format: WireFormat, a?: AuthInfo) => refusal(t, plugin, ctxFor({}, { route: 'models', format, modelPath: path, auth: a }));
  t.match(refused('acme%2Fnope', 'chat'), { status: 404, type: 'invalid_request_error', code: 'model_not_found', param: 'model', message: /"acme\/nope" does not exist/ }, 'OpenAI\'s 404');
  t.match(refused('acme%2Fnope', 'messages'), { status: 404, type: 'not_found_error', message: /"acme\/nope" does not exist/ }, 'Anthropic\'s 404');
  t.match(refused('acme/empty', 'messages'), { status: 404, message: /no offers/ }, 'not listed (no offer): not found either');
  t.match(refused('plain', 'messages', auth({ keyAllowedModels: ['acme/big'] })), { status: 404, message: /not in this API key's allowed models/ }, 'the same permission function as the list');
  t.match(refused('acme/small', 'chat', auth({ routing: { priceCapInput: 10_000 } })), { status: 404, message: /price cap/ });
  t.match(refused('100%', 'messages'), { status: 404, message: /"100%" does not exist/ }, 'not percent-encoding: taken as it is');
});

t.test('aliases resolve to their model for every request; permissions, offers and history use the model\'s id', async (t) => {
  const { plugin } = setup(TWO);
  const direct = ctxFor(msgBody());
  const offers = pick(plugin, direct);
  t.equal(direct.requestedModel, undefined, 'the model\'s own id is no alias');
  const ctx = ctxFor(msgBody({ model: 'big-latest' }));
  t.same(pick(plugin, ctx), offers, 'the model\'s offers, in the same order');
  t.equal(ctx.model?.id, 'acme/big');
  t.equal(ctx.requestedModel, 'big-latest');
  t.equal(ctx.body.model, 'big-latest', 'the client body is untouched');
  const count = ctxFor(msgBody({ model: 'vendor-big-2025', max_tokens: undefined }), { route: 'count_tokens' });
  t.equal(pick(plugin, count).length, 2, 'count_tokens too');
  t.match(refusal(t, plugin, ctxFor(msgBody({ model: 'big-latest' }), { auth: auth({ keyAllowedModels: ['plain'] }) })), {
    status: 403,
    message: /^"big-latest" is an alias of acme\/big\. Model acme\/big is not in this API key's allowed models \(plain\)/,
  });
  t.equal(pick(plugin, ctxFor(msgBody({ model: 'big-latest' }), { auth: auth({ keyAllowedModels: ['acme/big'] }) })).length, 2, 'a key allowed the model may use its aliases');
  t.match(refusal(t, plugin, ctxFor(msgBody({ model: 'big-latest', max_tokens: 9000 }))), { status: 400, code: 'output_limit_exceeded', message: /acme\/big/ });
});
