// The PostgreSQL store's hot path, timed in-process against a real server (GATEWAY_BENCH_POSTGRES,
// default postgres://postgres@127.0.0.1:5432/postgres; a scratch schema is created and dropped):
// reserve latency one at a time and with requests in flight, and the database round trips a
// request costs: those it waits for (the reserve) and those it shares with others (batches, change
// polls, heartbeats). Run: node dist/bench/postgres-reserve.js
import pg from 'pg';
import { performance } from 'node:perf_hooks';
import { openPostgresStore } from '../lib/store/postgres/store.js';
import { SERVING_CHANGE_POLL_MS } from '../lib/store/postgres/changes.js';
import type { HistoryRow } from '../lib/store/types.js';

const server = process.env.GATEWAY_BENCH_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/postgres';

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const ms = (v: number) => `${v.toFixed(3)} ms`;

async function main(): Promise<void> {
  const schema = `bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const url = `${server}${server.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  // Every statement any connection sends, counted at the client.
  let statements = 0;
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    statements++;
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;

  const store = openPostgresStore({ url, commitIntervalMs: 20, clock: Date.now, changePollMs: SERVING_CHANGE_POLL_MS });
  try {
    await store.sync();
    const account = await store.accounts.create({ email: 'bench@example.com' });
    await store.ledger.grant(account.id, 1e15);
    const { key } = await store.keys.create({ accountId: account.id, name: 'bench' });
    const reserve = () => store.ledger.reserve({ accountId: account.id, keyId: key.id, amount: 1_000_000, monthlyLimitNano: 1e14 });
    const row = (id: string): HistoryRow => ({
      requestId: id, time: Date.now(), accountId: account.id, keyId: key.id, route: 'chat', model: 'bench/m', listing: 'bench/m@p',
      attempts: [], status: 'ok', httpStatus: 200, stream: false, usage: { input: 500, output: 20, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 },
      holdNano: 1_000_000, costNano: 540_000, latencyMs: 3, ttfbMs: 1, error: null,
    });
    /** One request's store calls, as auth, budget-hold and metering make them. */
    let n = 0;
    const request = async (): Promise<number> => {
      await store.sync();
      store.keys.touch(key.id);
      const started = performance.now();
      const r = await reserve();
      const took = performance.now() - started;
      if (!r.ok) throw new Error(`refused: ${r.reason}`);
      store.ledger.settle(r.hold.id, 540_000);
      store.history.record(row(`req_${n++}`));
      return took;
    };

    for (let i = 0; i < 500; i++) await request(); // warm: prepared statements, plans, pool
    await store.flush();

    // The floor: a round trip that does nothing, on the same server and machine.
    const floor: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const started = performance.now();
      await admin.query('SELECT 1');
      floor.push(performance.now() - started);
    }
    floor.sort((a, b) => a - b);

    // One at a time: each request's reserve is the only one in flight.
    const one: number[] = [];
    statements = 0;
    const t0 = performance.now();
    for (let i = 0; i < 5000; i++) one.push(await request());
    await store.flush();
    const seqMs = performance.now() - t0;
    const perRequest = statements / 5000;
    one.sort((a, b) => a - b);

    // 32 in flight on one account: reserves of an account queue on its balance row's lock.
    const many: number[] = [];
    const t1 = performance.now();
    await Promise.all(Array.from({ length: 32 }, async () => {
      for (let i = 0; i < 300; i++) many.push(await request());
    }));
    await store.flush();
    const concMs = performance.now() - t1;
    many.sort((a, b) => a - b);

    console.log(`SELECT 1 round trip:     p50 ${ms(percentile(floor, 50))}  p99 ${ms(percentile(floor, 99))}`);
    console.log(`reserve, one in flight:  p50 ${ms(percentile(one, 50))}  p99 ${ms(percentile(one, 99))}  (${Math.round(5000 / (seqMs / 1000))} requests/s)`);
    console.log(`reserve, 32 in flight:   p50 ${ms(percentile(many, 50))}  p99 ${ms(percentile(many, 99))}  (${Math.round(many.length / (concMs / 1000))} requests/s, one account)`);
    console.log(`statements per request (one in flight): ${perRequest.toFixed(3)} in all; the request waits for 1 (its reserve)`);
  } finally {
    pg.Client.prototype.query = query;
    await store.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

await main();
