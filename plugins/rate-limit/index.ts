// rate-limit: requests and tokens per minute per API key (the key's own limits, else the config's
// rate_limits). Requests are counted from the headers, before the body is read: a key over its rate
// never gets a body buffered. Tokens are admitted on the estimate (input plus output budget, as
// OpenAI does) once offer-pick made it, before budget-hold holds any credit; when the request ends,
// the window is corrected by the tokens actually used. A refusal is a 429 with Retry-After and
// nothing is held or sent upstream. Every answer carries OpenAI's x-ratelimit-* headers.
// Several nodes on one database: each admits the key's limits divided by the live nodes (no round
// trip per request); the headers describe this node's share, the one its remaining and reset count.
import { performance } from 'node:perf_hooks';
import type { Plugin, PluginEnv } from '../../lib/plugin.js';
import type { AuthInfo, RequestContext } from '../../lib/context.js';
import type { RateLimitsConfig } from '../../lib/config-types.js';
import { GatewayError } from '../../lib/errors.js';
import { budgetParam } from '../offer-pick/index.js';
import { KeyLimiter, admit, correct, goDuration, nodeShare, remaining, resetMs, type KeyWindows } from './gcra.js';

const KEY = 'rate-limit';

/** The key's windows and limits (found once, in onHeaders), and the tokens admitted with TAT right after them. */
interface KeyState {
  w: KeyWindows;
  /** This node's shares of the key's limits. */
  rpm: number;
  tpm: number;
  /** The key's own token limit (a request above it can never pass). */
  keyTpm: number;
  admitted?: { tokens: number; until: number };
}

/** One limiter per store, so the windows outlive a config reload (which builds new plugins). */
const limiters = new WeakMap<object, KeyLimiter>();

function limiterFor(env: PluginEnv): KeyLimiter {
  const owner = (env.store as object | undefined) ?? env;
  let l = limiters.get(owner);
  if (!l) limiters.set(owner, (l = new KeyLimiter()));
  return l;
}

const rpmOf = (auth: AuthInfo, d: RateLimitsConfig) => auth.rpm ?? d.requests_per_minute;
const tpmOf = (auth: AuthInfo, d: RateLimitsConfig) => auth.tpm ?? d.tokens_per_minute;

/** A share as a header: whole units, at least 1 (a smaller share still admits one at a time). */
const headerLimit = (share: number) => (share > 0 ? Math.max(1, Math.floor(share + 1e-9)) : 0);

function setHeaders(ctx: RequestContext, w: KeyWindows, rpm: number, tpm: number, now: number): void {
  const h = (ctx.responseHeaders ??= {});
  h['x-ratelimit-limit-requests'] = headerLimit(rpm);
  h['x-ratelimit-remaining-requests'] = remaining(w, 'requests', rpm, now);
  h['x-ratelimit-reset-requests'] = goDuration(resetMs(w, 'requests', now));
  h['x-ratelimit-limit-tokens'] = headerLimit(tpm);
  setTokenHeaders(h, w, tpm, now);
}

/** After the tokens were admitted (the request headers set before stay true). */
function setTokenHeaders(h: Record<string, string | number>, w: KeyWindows, tpm: number, now: number): void {
  h['x-ratelimit-remaining-tokens'] = remaining(w, 'tokens', tpm, now);
  h['x-ratelimit-reset-tokens'] = goDuration(resetMs(w, 'tokens', now));
}

const sharedBy = (nodes: number) => (nodes > 1 ? ` (shared by ${nodes} gateway nodes)` : '');

const retryAfterSeconds = (waitMs: number) => Math.max(1, Math.ceil(waitMs / 1000));

const limited = (code: string, message: string, retryAfter?: number, param?: string) =>
  new GatewayError(429, 'rate_limit_error', code, message, { retryAfter, param });

export default function rateLimit(env: PluginEnv): Plugin {
  const limiter = limiterFor(env);
  const defaults = env.config.rate_limits;
  // Monotonic: a wall-clock step back must not lock keys out.
  const clock = (env.monotonicClock as (() => number) | undefined) ?? (() => performance.now());
  const store = env.store as { liveNodes?(): number } | undefined;
  const liveNodes = () => store?.liveNodes?.() ?? 1;

  return {
    name: KEY,

    onHeaders(ctx: RequestContext) {
      const auth = ctx.auth;
      if (!auth) return;
      const keyRpm = rpmOf(auth, defaults);
      const nodes = liveNodes();
      const rpm = nodeShare(keyRpm, nodes), tpm = nodeShare(tpmOf(auth, defaults), nodes);
      const w = limiter.windows(auth.keyId);
      ctx.state[KEY] = { w, rpm, tpm, keyTpm: tpmOf(auth, defaults) } satisfies KeyState;
      const now = clock();
      // The models list is free: it only reports the state.
      const wait = ctx.route === 'models' ? 0 : admit(w, 'requests', rpm, 1, now, nodes > 1);
      setHeaders(ctx, w, rpm, tpm, now);
      if (wait > 0) {
        const s = retryAfterSeconds(wait);
        throw limited('rate_limit_requests', `This API key is over its limit of ${keyRpm} requests per minute${sharedBy(nodes)}. Retry in ${s} s.`, s);
      }
    },

    onRequest(ctx: RequestContext) {
      const state = ctx.state[KEY] as KeyState | undefined;
      // A token count uses no tokens: it counts as a request only.
      if (!state || (ctx.route !== 'chat' && ctx.route !== 'messages')) return;
      const { w, tpm, keyTpm } = state;
      const now = clock();
      const tokens = Math.ceil(ctx.estimatedInputTokens) + ctx.outputBudget;
      if (tokens > keyTpm) {
        // No wait would help: say so, and what to lower.
        throw limited('rate_limit_tokens',
          `This request needs ${tokens} tokens (its estimated input plus its output budget of ${ctx.outputBudget}), more than ` +
          `this API key's limit of ${keyTpm} tokens per minute. Lower ${budgetParam(ctx)} or shorten the input.`,
          undefined, budgetParam(ctx));
      }
      const wait = admit(w, 'tokens', tpm, tokens, now, tpm < keyTpm);
      if (ctx.responseHeaders) setTokenHeaders(ctx.responseHeaders, w, tpm, now);
      if (wait > 0) {
        const s = retryAfterSeconds(wait);
        throw limited('rate_limit_tokens',
          `This API key is over its limit of ${keyTpm} tokens per minute${sharedBy(liveNodes())} (this request needs ${tokens}: its estimated input ` +
          `plus its output budget). Retry in ${s} s, or lower ${budgetParam(ctx)}.`, s);
      }
      state.admitted = { tokens, until: w.tokens };
    },

    // After metering's onDone (done hooks run in reverse chain order), so ctx.usage is the actual use.
    onDone(ctx: RequestContext) {
      const state = ctx.state[KEY] as KeyState | undefined;
      const admitted = state?.admitted;
      if (!state || !admitted) return;
      const u = ctx.usage;
      // No usage: nothing was served (no tokens used), or no metering ran (keep the estimate).
      if (!u && ctx.offer) return;
      const used = u ? u.input + u.output + u.cacheRead + u.cacheWrite : 0;
      correct(state.w, 'tokens', state.tpm, used - admitted.tokens, admitted.until, clock());
    },
  };
}
