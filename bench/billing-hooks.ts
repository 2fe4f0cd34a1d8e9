// Billing's own work on the event loop, timed in-process: the auth, budget-hold and metering hooks
// of one request (key lookup, hold, settle, history row, the batch handed to the store's writer
// thread) against a real store on a temporary file, with nothing else competing for the CPU. The
// closed-loop on/off ratio measures the whole machine instead (writer thread, simulator, load).
import type { IncomingMessage } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hrtime } from 'node:process';
import { createContext, type Offer } from '../lib/context.js';
import { unitPrices } from '../lib/offers.js';
import type { PluginEnv, UpstreamRequest } from '../lib/plugin.js';
import { openSqliteStore } from '../lib/store/sqlite/store.js';
import auth from '../plugins/auth/index.js';
import budgetHold from '../plugins/budget-hold/index.js';
import metering from '../plugins/metering/index.js';

/** Requests handled per event-loop turn, as a busy server sees them arrive. */
const PER_TURN = 8;

export async function measureBillingHooks(ms: number): Promise<{ usPerRequest: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-bench-billing-'));
  const store = openSqliteStore({ path: join(dir, 'billing.db'), commitIntervalMs: 5, clock: Date.now, backgroundWriter: true });
  try {
    const account = await store.accounts.create({ email: 'billing-bench@example.com' });
    await store.ledger.grant(account.id, 1e15);
    const { secret } = await store.keys.create({ accountId: account.id, name: 'bench' });
    const env = { config: {}, offersByModel: new Map(), store, clock: Date.now } as unknown as PluginEnv;
    const [a, h, m] = [auth(env), budgetHold(env), metering(env)];
    const offer = { listing: 'bench/m@p', model: { id: 'bench/m' }, upstreamModel: 'up', prices: unitPrices({ input: 1, output: 2 }), provider: { format: 'chat' } } as unknown as Offer;
    const up = { offer, format: 'chat' } as UpstreamRequest;
    const answer = { choices: [{ message: { role: 'assistant', content: 'hello' } }], usage: { prompt_tokens: 500, completion_tokens: 20 } };
    const req = { headers: { authorization: `Bearer ${secret}` } } as unknown as IncomingMessage;
    let n = 0;
    const one = async () => {
      const ctx = createContext({ id: `bench-${n++}`, route: 'chat', clientFormat: 'chat', req });
      Object.assign(ctx, { candidates: [offer], estimatedInputTokens: 600, outputBudget: 256, body: { model: 'bench/m' } });
      await a.onRequest!(ctx);
      await h.onRequest!(ctx);
      m.onResponseBody!(ctx, answer, up);
      Object.assign(ctx, { offer, status: 200 });
      ctx.attempts.push({ listing: offer.listing, outcome: 'ok', status: 200, durationMs: 1 });
      await m.onDone!(ctx, 'ok');
      await h.onDone!(ctx, 'ok');
    };
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    const run = async (untilNs: bigint) => {
      let count = 0;
      while (hrtime.bigint() < untilNs) {
        await Promise.all(Array.from({ length: PER_TURN }, one));
        count += PER_TURN;
        await turn();
      }
      return count;
    };
    await run(hrtime.bigint() + BigInt(ms * 1e6)); // warm-up
    const start = hrtime.bigint();
    const count = await run(start + BigInt(ms * 1e6));
    return { usPerRequest: Number(hrtime.bigint() - start) / count / 1000 };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
