// The cost of metrics on the request path, timed in-process: the recorder's one call at a request's
// end (request count, duration and first-byte histograms, tokens, charge, the attempts) with
// metrics on, against the no-op recorder of metrics off, over the same loop. Requests rotate over
// a few models, listings and routes, with a failover now and then, as traffic would. Also the time
// a scrape takes once those series exist (off the request path, but on the same event loop).
import http from 'node:http';
import { Socket } from 'node:net';
import { hrtime } from 'node:process';
import { performance } from 'node:perf_hooks';
import { createContext, type Offer, type RequestContext, type Route } from '../lib/context.js';
import type { GatewayConfig, ModelConfig } from '../lib/config-types.js';
import { Breakers } from '../lib/breaker.js';
import type { Store } from '../lib/store/types.js';
import { GatewayMetrics } from '../lib/metrics/gateway-metrics.js';
import { NO_METRICS, type MetricsRecorder } from '../lib/metrics/recorder.js';

const MODELS = 8;
const ROUTES: Route[] = ['chat', 'messages'];

export interface MetricsCost {
  /** Added event-loop time per request with metrics on (the no-op recorder's loop subtracted). */
  usPerRequest: number;
  /** The same loop with metrics off (the no-op call), for comparison. */
  offUsPerRequest: number;
  /** One scrape of the registry these requests filled, after a first one (ms). */
  scrapeMs: number;
}

export async function measureMetricsHooks(ms: number): Promise<MetricsCost> {
  const models: ModelConfig[] = Array.from({ length: MODELS }, (_, i) => ({ id: `bench/model-${i}`, context_window: 200000, max_output_tokens: 8192 }));
  const offers = models.flatMap((m) => [0, 1].map((j) => ({ listing: `${m.id}@p${j}`, model: m } as unknown as Offer)));
  const config = { offers: offers.map((o) => ({ listing: o.listing })) } as unknown as GatewayConfig;
  const store = { ledger: { openHolds: () => ({ count: 3, nano: 1e6 }) }, writes: { unwritten: () => 0, problem: () => null, observe() {} } } as unknown as Store;
  const metrics = new GatewayMetrics({ config: () => config, store, breakers: new Breakers({ failure_threshold: 5, cooldown_ms: 1000 }), requestsInFlight: () => 0, notReady: () => null, keyLabels: false });
  const req = new http.IncomingMessage(new Socket());
  const usage = { input: 500, output: 20, cacheRead: 100, cacheWrite: 0, cacheWrite1h: 0 };
  // Contexts made before timing: the recorder's work is what is timed, not the context's.
  const contexts: RequestContext[] = Array.from({ length: 1024 }, (_, n) => {
    const primary = offers[(n * 2) % offers.length];
    const ctx = createContext({ id: 'bench', route: ROUTES[n % 2], clientFormat: 'chat', req });
    const failover = n % 16 === 0;
    ctx.model = primary.model;
    ctx.offer = failover ? offers[(n * 2 + 1) % offers.length] : primary;
    ctx.status = n % 50 === 0 ? 429 : 200;
    ctx.firstByteAt = performance.now();
    ctx.usage = usage;
    ctx.chargedNano = 1_234_000;
    if (failover) ctx.attempts.push({ listing: primary.listing, outcome: 'failed', status: 503, reason: 'upstream 503', durationMs: 1 });
    ctx.attempts.push({ listing: ctx.offer.listing, outcome: 'ok', status: 200, durationMs: 1 });
    return ctx;
  });
  const run = (recorder: MetricsRecorder) => {
    let count = 0;
    const t0 = hrtime.bigint();
    const until = t0 + BigInt(ms * 1e6);
    let now = t0;
    while (now < until) {
      for (let i = 0; i < contexts.length; i++) recorder.requestEnded(contexts[i]);
      count += contexts.length;
      now = hrtime.bigint();
    }
    return Number(now - t0) / count / 1000;
  };
  run(metrics); // warm-up, and every series made
  const off = run(NO_METRICS);
  const on = run(metrics);
  await metrics.scrape(); // the first one also loads and warms prom-client's formatting
  const s0 = performance.now();
  await metrics.scrape();
  return { usPerRequest: on - off, offUsPerRequest: off, scrapeMs: performance.now() - s0 };
}

// `node dist/bench/metrics-hooks.js [ms]`: this measurement alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await measureMetricsHooks(Number(process.argv[2] ?? 2000));
  process.stdout.write(`metrics on: +${(r.usPerRequest * 1000).toFixed(0)} ns per request (off: ${(r.offUsPerRequest * 1000).toFixed(1)} ns, the no-op call); one scrape ${r.scrapeMs.toFixed(2)} ms\n`);
}
