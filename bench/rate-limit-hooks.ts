// The rate limiter's cost, timed in-process: the rate-limit plugin's hooks of one request (requests
// counted from the headers, tokens admitted on the estimate, the window corrected by the usage) plus
// writing its six x-ratelimit-* headers into a real http.ServerResponse, against the same loop
// without them. Keys rotate over a few thousand, as many clients would.
import http from 'node:http';
import { Socket } from 'node:net';
import { hrtime } from 'node:process';
import { createContext, type AuthInfo } from '../lib/context.js';
import type { PluginEnv } from '../lib/plugin.js';
import rateLimit from '../plugins/rate-limit/index.js';

const KEYS = 4096;
const ROUTING = { allow: null, deny: [], priceCapInput: null, priceCapOutput: null };

export function measureRateLimitHooks(ms: number): { usPerRequest: number } {
  const env = { config: { rate_limits: { requests_per_minute: 1e9, tokens_per_minute: 1e12 } }, offersByModel: new Map() } as unknown as PluginEnv;
  const plugin = rateLimit(env);
  const auths: AuthInfo[] = Array.from({ length: KEYS }, (_, i) => ({ accountId: i, keyId: i, keyAllowedModels: null, monthlyLimitNano: null, routing: ROUTING }));
  const req = new http.IncomingMessage(new Socket());
  const usage = { input: 500, output: 20, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 };
  let n = 0;
  const request = () => {
    const ctx = createContext({ id: 'bench', route: 'chat', clientFormat: 'chat', req, auth: auths[n++ % KEYS] });
    ctx.estimatedInputTokens = 600;
    ctx.outputBudget = 256;
    return { ctx, res: new http.ServerResponse(req) };
  };
  const bare = () => void request();
  const limited = () => {
    const { ctx, res } = request();
    plugin.onHeaders!(ctx);
    plugin.onRequest!(ctx);
    const h = ctx.responseHeaders!;
    for (const name in h) res.setHeader(name, h[name]);
    ctx.usage = usage;
    plugin.onDone!(ctx, 'ok');
  };
  const run = (one: () => void) => {
    let count = 0;
    const t0 = hrtime.bigint();
    const until = t0 + BigInt(ms * 1e6);
    let now = t0;
    while (now < until) {
      for (let i = 0; i < 1000; i++) one();
      count += 1000;
      now = hrtime.bigint();
    }
    return Number(now - t0) / count / 1000;
  };
  run(limited); // warm-up
  const loop = run(bare);
  return { usPerRequest: run(limited) - loop };
}
