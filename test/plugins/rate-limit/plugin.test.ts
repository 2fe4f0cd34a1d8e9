// The rate-limit plugin's token correction when a request ends.
import t from 'tap';
import type { IncomingMessage } from 'node:http';
import rateLimit from '../../../plugins/rate-limit/index.js';
import { createContext, type RequestContext } from '../../../lib/context.js';
import type { PluginEnv } from '../../../lib/plugin.js';

const env = { config: { rate_limits: { requests_per_minute: 100, tokens_per_minute: 1000 } }, offersByModel: new Map() } as unknown as PluginEnv;
const auth = { accountId: 1, keyId: 7, keyAllowedModels: null, monthlyLimitNano: null, routing: { allow: null, deny: [], priceCapInput: null, priceCapOutput: null } };

function request(plugin: ReturnType<typeof rateLimit>, n: number): RequestContext {
  const ctx = createContext({ id: `r${n}`, route: 'chat', clientFormat: 'chat', req: { headers: {} } as IncomingMessage, auth });
  Object.assign(ctx, { estimatedInputTokens: 300, outputBudget: 300 });
  plugin.onHeaders!(ctx);
  plugin.onRequest!(ctx);
  return ctx;
}

t.test('a request refused before any upstream (no usage, nothing served) gives its whole estimate back', async (t) => {
  const plugin = rateLimit(env);
  const first = request(plugin, 1);
  t.equal(first.responseHeaders!['x-ratelimit-remaining-tokens'], 400, '600 of 1000 admitted on the estimate');
  plugin.onDone!(first, 'error');
  const second = request(plugin, 2);
  t.equal(second.responseHeaders!['x-ratelimit-remaining-tokens'], 400, 'the first request used nothing: only the second holds its estimate');
});
