// offer-pick with billable request options: only offers that declare them (offers[].allow) are
// candidates, 400 naming the option when none does; each attempt drops unknown fields and gets the
// betas its provider lists or its offer declares.
import t from 'tap';
import type { IncomingMessage } from 'node:http';
import offerPick from '../../../plugins/offer-pick/index.js';
import { parseConfig } from '../../../lib/config.js';
import { resolveOffers } from '../../../lib/offers.js';
import { GatewayError } from '../../../lib/errors.js';
import { createContext, type RequestContext } from '../../../lib/context.js';
import type { UpstreamRequest } from '../../../lib/plugin.js';
import type { WireFormat } from '../../../lib/config-types.js';
import { errorWith } from '../../helpers/error-pattern.js';

const config = parseConfig(
  JSON.stringify({
    providers: [
      { id: 'msg', format: 'messages', base_url: 'https://m.example.com' },
      { id: 'chat', format: 'chat', base_url: 'https://c.example.com/v1' },
    ],
    models: [{ id: 'acme/big', context_window: 100_000, max_output_tokens: 8000 }],
    offers: [
      { listing: 'cheap', model: 'acme/big', provider: 'msg', upstream_model: 'u1', price: { input: 1, output: 2 } },
      { listing: 'priority', model: 'acme/big', provider: 'msg', upstream_model: 'u2', price: { input: 6, output: 30 }, allow: { fields: ['service_tier', 'diagnostics', 'thread'], tools: ['web_search'], betas: ['context-1m'] } },
      { listing: 'chat-priority', model: 'acme/big', provider: 'chat', upstream_model: 'u3', price: { input: 7, output: 31 }, allow: { fields: ['service_tier', 'thread'] } },
    ],
  }),
  'allow-test.json',
  {},
);
const offersByModel = resolveOffers(config);
const plugin = offerPick({ config, offersByModel });
const offer = (listing: string) => offersByModel.get('acme/big')!.find((o) => o.listing === listing)!;

function ctxFor(body: Record<string, any>, format: WireFormat = 'messages', headers: Record<string, string> = {}): RequestContext {
  return createContext({ id: 'req_test', route: format, clientFormat: format, req: { headers } as unknown as IncomingMessage, body: { model: 'acme/big', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], ...body } });
}
function attempt(ctx: RequestContext, listing: string): UpstreamRequest {
  const o = offer(listing);
  const up: UpstreamRequest = { offer: o, format: o.provider.format, path: '/', body: ctx.body, headers: {} };
  plugin.onAttempt!(ctx, up);
  return up;
}
const listings = (ctx: RequestContext) => ctx.candidates.map((o) => o.listing);

t.test('config: providers get the default beta list, offers an empty allowance', async (t) => {
  t.ok(config.providers[0].betas!.includes('claude-code'));
  t.notOk(config.providers[0].betas!.some((b) => b.startsWith('context-1m')), 'no billable beta by default');
  t.same(config.offers[0].allow, { fields: [], tools: [], betas: [] });
});

t.test('a neutral request may use every offer, cheapest first', async (t) => {
  const ctx = ctxFor({ service_tier: 'auto' });
  plugin.onRequest!(ctx);
  t.same(listings(ctx), ['cheap', 'priority', 'chat-priority']);
});

t.test('a billable field: only offers that declare it, of any upstream format', async (t) => {
  const ctx = ctxFor({ service_tier: 'priority' });
  plugin.onRequest!(ctx);
  t.same(listings(ctx), ['priority', 'chat-priority']);
  t.equal(attempt(ctx, 'priority').body.service_tier, 'priority', 'forwarded to the offer that declares it');
});

for (const format of ['chat', 'messages'] as const) {
  t.test(`no offer declares it: 400 naming the option (${format} client)`, async (t) => {
    const ctx = ctxFor({ mcp_servers: [{ type: 'url', url: 'https://x', name: 'x' }], web_search_options: {} }, format);
    const err = (() => {
      try {
        plugin.onRequest!(ctx);
      } catch (e) {
        return e;
      }
    })() as GatewayError;
    t.ok(err instanceof GatewayError);
    t.equal(err.status, 400);
    t.equal(err.code, 'billable_option_not_offered');
    const field = format === 'chat' ? 'web_search_options' : 'mcp_servers';
    t.equal(err.param, field);
    t.match(err.message, field);
  });
}

t.test('one option declared by an offer, another by none: the error names the one nobody declares', async (t) => {
  const ctx = ctxFor({ service_tier: 'priority', container: 'c1' });
  t.throws(() => plugin.onRequest!(ctx), errorWith({ code: 'billable_option_not_offered', param: 'container' }));
});

t.test('server tools: the offer must declare the tool', async (t) => {
  const ctx = ctxFor({ tools: [{ name: 'f', input_schema: {} }, { type: 'web_search_20250305', name: 'web_search' }] });
  plugin.onRequest!(ctx);
  t.same(listings(ctx), ['priority']);
  t.throws(() => plugin.onRequest!(ctxFor({ tools: [{ type: 'web_fetch_20250910', name: 'web_fetch' }] })), errorWith({ param: 'tools[0]' }));
});

t.test('unknown fields are dropped unless the offer declares them; the client body is untouched', async (t) => {
  const ctx = ctxFor({ diagnostics: { previous_message_id: 'm' }, some_future_field: 1 });
  plugin.onRequest!(ctx);
  const cheap = attempt(ctx, 'cheap').body;
  t.notOk('diagnostics' in cheap);
  t.notOk('some_future_field' in cheap);
  t.equal(cheap.messages, ctx.body.messages);
  const declared = attempt(ctx, 'priority').body;
  t.same(declared.diagnostics, { previous_message_id: 'm' });
  t.notOk('some_future_field' in declared);
  t.equal(ctx.body.some_future_field, 1, 'failover reuses the client body');
});

t.test('a messages thread is served by every offer and reaches none of them, even one that declares it', async (t) => {
  const ctx = ctxFor({ thread: { type: 'create' } });
  plugin.onRequest!(ctx);
  t.same(listings(ctx), ['cheap', 'priority', 'chat-priority'], 'not billable: the gateway answers it');
  for (const listing of ['cheap', 'priority']) t.notOk('thread' in attempt(ctx, listing).body, listing);
  t.same(ctx.body.thread, { type: 'create' }, 'the client body is untouched');
  const chat = ctxFor({ thread: { type: 'create' } }, 'chat');
  plugin.onRequest!(chat);
  t.same(attempt(chat, 'chat-priority').body.thread, { type: 'create' }, 'a chat client\'s thread is an unknown field: forwarded only where declared');
});

t.test('betas: listed ones forwarded, unknown dropped, billable only where declared', async (t) => {
  const headers = { 'anthropic-beta': 'claude-code-20250219, prompt-caching-scope-2026-01-05,made-up-2030-01-01' };
  const ctx = ctxFor({}, 'messages', headers);
  plugin.onRequest!(ctx);
  t.equal(attempt(ctx, 'cheap').headers['anthropic-beta'], 'claude-code-20250219,prompt-caching-scope-2026-01-05');
  t.same(attempt(ctx, 'chat-priority').headers, {}, 'none to a chat upstream');

  const long = ctxFor({}, 'messages', { 'anthropic-beta': 'context-1m-2025-08-07,claude-code-20250219' });
  plugin.onRequest!(long);
  t.same(listings(long), ['priority'], 'context-1m is billable: only the offer that declares it');
  t.equal(attempt(long, 'priority').headers['anthropic-beta'], 'claude-code-20250219,context-1m-2025-08-07');

});

t.test('a chat client\'s anthropic-beta is never forwarded nor judged', async (t) => {
  const headers = { 'anthropic-beta': 'context-1m-2025-08-07,claude-code-20250219' };
  const ctx = ctxFor({}, 'chat', headers);
  plugin.onRequest!(ctx);
  t.same(listings(ctx), ['cheap', 'priority', 'chat-priority']);
  for (const l of ['cheap', 'priority']) t.same(attempt(ctx, l).headers, {});
});
