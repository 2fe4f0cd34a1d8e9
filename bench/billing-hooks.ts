// Billing's own work on the event loop, timed in-process: the auth, budget-hold and metering hooks
// of one request (key lookup, hold, settle, history row, the batch handed to the store's writer
// thread and its commit taken back) against a real store on a temporary file, with nothing else
// competing for the CPU. The closed-loop on/off ratio measures the whole machine instead (writer
// thread, simulator, load).
import type { IncomingMessage } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createContext, type Offer } from '../lib/context.js';
import { unitPrices } from '../lib/offers.js';
import type { PluginEnv, UpstreamRequest } from '../lib/plugin.js';
import { openSqliteStore } from '../lib/store/sqlite/store.js';
import auth from '../plugins/auth/index.js';
import budgetHold from '../plugins/budget-hold/index.js';
import metering from '../plugins/metering/index.js';

/**
 * Turns between waits for the writer thread (a few ms of requests). Unpaced, this loop produces
 * rows faster than any server would and faster than the writer stores them: the queues would
 * grow without end and their garbage collection would be timed as billing's.
 */
const FLUSH_EVERY = 32;

/**
 * `perTurn`: requests handled per event-loop turn. A busy server sees several arrive together;
 * one per turn also pays auth's once-per-turn look at other processes' changes every time.
 */
export async function measureBillingHooks(ms: number, perTurn: number): Promise<{ usPerRequest: number }> {
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
    // One keep-alive client connection sending the same key on every request.
    const req = { headers: { authorization: `Bearer ${secret}` }, socket: {} } as unknown as IncomingMessage;
    let n = 0;
    const request = () => {
      const ctx = createContext({ id: `bench-${n++}`, route: 'chat', clientFormat: 'chat', req });
      Object.assign(ctx, { candidates: [offer], estimatedInputTokens: 600, outputBudget: 256, body: { model: 'bench/m' } });
      return ctx;
    };
    /** The loop's own cost (a request context, the turns), subtracted from the hooks' figure. */
    const bare = async () => void request();
    const billed = async () => {
      const ctx = request();
      await a.onHeaders!(ctx);
      await h.onRequest!(ctx);
      m.onResponseBody!(ctx, answer, up);
      Object.assign(ctx, { offer, status: 200 });
      ctx.attempts.push({ listing: offer.listing, outcome: 'ok', status: 200, durationMs: 1 });
      await m.onDone!(ctx, 'ok');
      await h.onDone!(ctx, 'ok');
    };
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    /**
     * The event loop's busy time (not its waits in the poll) over `ms` of it: the requests' turns
     * and, every FLUSH_EVERY turns, the flush: the batch taken and posted, and its commit taken
     * back (takeInOwnCommits). The writer thread's own work is not counted, nor the wait for it.
     */
    const run = async (one: () => Promise<void>) => {
      let count = 0;
      const start = performance.eventLoopUtilization();
      while (performance.eventLoopUtilization(start).active < ms) {
        for (let i = 0; i < FLUSH_EVERY; i++) {
          await Promise.all(Array.from({ length: perTurn }, one));
          count += perTurn;
          await turn();
        }
        await store.flush();
      }
      return (performance.eventLoopUtilization(start).active * 1000) / count;
    };
    await run(billed); // warm-up
    const loop = await run(bare);
    return { usPerRequest: (await run(billed)) - loop };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
