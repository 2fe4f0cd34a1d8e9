// budget-hold: before an inference request goes upstream, reserve credit for its worst case:
// estimated input × the highest input-side price (input, cache writes or cache read) + output budget
// × the highest output price among the candidate offers (so neither failover to a dearer offer nor
// prompt caching ever exceeds it). Admission is atomic in the ledger; a refusal is a 402 saying
// which limit was hit. The hold is settled by metering; if it is still open when this plugin's
// onDone runs (metering never saw the request, or its settle failed), it is released.
import type { Plugin, PluginEnv } from '../../lib/plugin.js';
import type { RequestContext } from '../../lib/context.js';
import { GatewayError, unavailable } from '../../lib/errors.js';
import { andThen } from '../../lib/maybe-promise.js';
import { formatUsd } from '../../lib/store/money.js';
import type { ReserveRefusal, Store } from '../../lib/store/types.js';
import { budgetParam } from '../offer-pick/index.js';
import { holdOf, setHold } from './hold.js';

const billing = (code: string, message: string, param: string | null = null) =>
  new GatewayError(402, 'billing_error', code, message, { param });

function tooLarge(ctx: RequestContext, amount: bigint | number, what: string): GatewayError {
  const shown = typeof amount === 'bigint' && amount > BigInt(Number.MAX_SAFE_INTEGER) ? 'more than $9,007,199' : formatUsd(Number(amount));
  return billing('hold_too_large',
    `The credit hold for this request's output budget (${ctx.outputBudget} tokens: ${shown}) is too large: ${what}. ` +
    `Lower ${budgetParam(ctx)}.`, budgetParam(ctx));
}

function refusalError(ctx: RequestContext, r: ReserveRefusal): GatewayError {
  switch (r.reason) {
    case 'insufficient_credit':
      return billing('insufficient_credit',
        `Not enough credit: this request needs a hold of ${formatUsd(r.amount)} and the account has ` +
        `${formatUsd(r.available)} available (balance minus requests in flight). Add credits.`);
    case 'monthly_limit_reached':
      return billing('monthly_limit_reached',
        `This API key's monthly limit of ${formatUsd(r.limit)} is reached: ${formatUsd(r.monthToDate)} spent this month` +
        (r.keyHeld > 0 ? ` and ${formatUsd(r.keyHeld)} held by requests in flight` : '') +
        `, and this request needs a hold of ${formatUsd(r.amount)}. Check the key's monthly limit.`);
    case 'store_backlogged':
      return unavailable('billing_unavailable',
        'The gateway cannot record charges at the moment (its database is not accepting writes), so it takes no new ' +
        'requests until it can. Nothing was charged; retry shortly.', 5);
    case 'hold_too_large':
      return r.exceeds === 'balance'
        ? tooLarge(ctx, r.amount, `it exceeds the account's whole balance of ${formatUsd(r.balance)} (or add credits)`)
        : tooLarge(ctx, r.amount, `it exceeds this API key's monthly limit of ${formatUsd(r.limit)}`);
  }
}

const oneHourTtl = (c: any) => c !== null && typeof c === 'object' && c.ttl === '1h';

/** Content blocks (or parts) of a message, a system prompt or a tool result: a list, or a string without any. */
const blocksOf = (v: any): any[] => (Array.isArray(v) ? v : []);

/**
 * Whether any cache_control of the request (top level, system, tools, message blocks, tool results'
 * blocks, in either format) asks for the 1-hour TTL: the only way an answer bills 1-hour writes.
 */
export function asksOneHourCache(body: Record<string, any>): boolean {
  if (oneHourTtl(body.cache_control)) return true;
  for (const b of blocksOf(body.system)) if (oneHourTtl(b?.cache_control)) return true;
  for (const tool of blocksOf(body.tools)) if (oneHourTtl(tool?.cache_control)) return true;
  for (const m of blocksOf(body.messages)) {
    if (oneHourTtl(m?.cache_control)) return true;
    for (const b of blocksOf(m?.content)) {
      if (oneHourTtl(b?.cache_control)) return true;
      for (const inner of blocksOf(b?.content)) if (oneHourTtl(inner?.cache_control)) return true;
    }
  }
  return false;
}

export default function budgetHold(env: PluginEnv): Plugin {
  const store = env.store as Store;
  return {
    name: 'budget-hold',

    onRequest(ctx: RequestContext) {
      if ((ctx.route !== 'chat' && ctx.route !== 'messages') || !ctx.auth || ctx.candidates.length === 0) return;
      let maxInput = 0, maxOutput = 0, max1h = 0;
      for (const { prices: p, provider } of ctx.candidates) {
        // Input tokens may be billed as cache writes or reads, at their own prices. 1-hour writes
        // happen only when the request asks for that TTL, and only the messages format reports them
        // (metering never charges them to a chat-format upstream's answer).
        if (provider.format === 'messages') max1h = Math.max(max1h, p.cacheWrite1h);
        maxInput = Math.max(maxInput, p.input, p.cacheWrite, p.cacheRead);
        maxOutput = Math.max(maxOutput, p.output);
      }
      // The request is walked for a 1-hour TTL only when that price would raise the hold.
      if (max1h > maxInput && asksOneHourCache(ctx.body)) maxInput = max1h;
      const amount = BigInt(Math.ceil(ctx.estimatedInputTokens)) * BigInt(maxInput) +
        BigInt(ctx.outputBudget) * BigInt(maxOutput);
      if (amount > BigInt(Number.MAX_SAFE_INTEGER)) throw tooLarge(ctx, amount, 'it exceeds any possible balance');
      const reserved = store.ledger.reserve({
        accountId: ctx.auth.accountId,
        keyId: ctx.auth.keyId,
        amount: Number(amount),
        monthlyLimitNano: ctx.auth.monthlyLimitNano,
        requestId: ctx.id,
      });
      return andThen(reserved, (r) => {
        if (!r.ok) throw refusalError(ctx, r);
        setHold(ctx, { id: r.hold.id, amount: r.hold.amount, ended: false });
      });
    },

    onDone(ctx: RequestContext) {
      const hold = holdOf(ctx);
      if (!hold || hold.ended) return;
      return andThen(store.ledger.release(hold.id), () => {
        hold.ended = true;
      });
    },
  };
}
