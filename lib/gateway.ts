// Assembles a running gateway from a config: the in-process simulator (when a provider asks for it),
// the store, the plugin chain, the transports and the HTTP server. Reload swaps the chain for new
// requests; requests in flight finish on the chain they started with.
import type { GatewayConfig } from './config-types.js';
import { lruOfAtMost } from './lru.js';
import { Chain, requestFailures, type ChainDeps } from './chain.js';
import { Breakers } from './breaker.js';
import { Transports } from './proxy.js';
import { resolveOffers } from './offers.js';
import { GatewayServer, type PageHandler } from './server.js';
import { createLogger, LogSink, type Logger, type LogStream } from './log.js';
import { logRequest } from './request-log.js';
import { startTracing, type Tracing } from './tracing/index.js';
import type { Plugin, PluginEnv } from './plugin.js';
import type { RequestContext } from './context.js';
import { pluginFactories } from '../plugins/index.js';
import { startSimulator, type Simulator } from './simulator/index.js';
import { openStore, SERVING_CHANGE_POLL_MS } from './store/index.js';
import type { Store } from './store/types.js';
import { ensureDemoAccount, type DemoAccount } from './store/demo.js';
import { openApiPage } from './openapi-page.js';
import { dashboardPages } from './dashboard/index.js';
import { healthPages, notReady, type ReadinessDeps } from './health.js';
import { GatewayMetrics } from './metrics/gateway-metrics.js';
import { startMetricsListener, type MetricsListener } from './metrics/listener.js';

export interface GatewayOptions {
  /** Operator lines; default: stderr, with the config's log level and format. */
  log?: Logger;
  /** Where request lines go (default: stdout). */
  requestLog?: LogStream;
  /** Use this store instead of opening config.storage.sqlite (tests). */
  store?: Store;
  /** Clock for month boundaries and holds (tests). */
  clock?: () => number;
  /** Extra pages served outside the chain. */
  pages?: PageHandler[];
  /** Remember finished request ids so requestFinished() works (tests and tooling; off in production). */
  trackFinished?: boolean;
  /** How often the hold sweeper runs (default HOLD_SWEEP_INTERVAL_MS; tests shorten it). */
  holdSweepIntervalMs?: number;
}

export interface Gateway {
  url: string;
  /** Where Prometheus scrapes (config metrics); absent: metrics are off. */
  metricsUrl?: string;
  /** Operator lines (start, stop, reload), as configured. */
  log: Logger;
  /** Spans, when tracing is configured. */
  tracing?: Tracing;
  config: GatewayConfig;
  store: Store;
  simulator?: Simulator;
  /** The demo account's key and dashboard password, made on first run (printed once). */
  demo: DemoAccount | null;
  /**
   * Resolves once the request with this id has fully ended (its hold settled, its history row
   * queued, its log line written: the waiting lines are written out then): a response can reach the
   * client before that. Needs the trackFinished option.
   */
  requestFinished(requestId: string): Promise<void>;
  reload(next: GatewayConfig): Promise<void>;
  close(): Promise<void>;
}

/** Ids of recently finished requests, and who waits for which (only with trackFinished). */
class Finished {
  private readonly done = lruOfAtMost<string, true>(10_000);
  private readonly waiters = new Map<string, () => void>();
  add(id: string): void {
    this.done.set(id, true);
    const w = this.waiters.get(id);
    if (w) {
      this.waiters.delete(id);
      w();
    }
  }
  wait(id: string): Promise<void> {
    if (this.done.has(id)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.set(id, resolve));
  }
}

function buildChain(config: GatewayConfig, env: PluginEnv, deps: Omit<ChainDeps, 'config'>, tracing: Tracing | undefined): Chain {
  const plugins: Plugin[] = config.plugins.map((name) => {
    const factory = pluginFactories[name];
    if (!factory) throw new Error(`unknown plugin "${name}"`);
    return factory(env);
  });
  if (tracing) {
    plugins.unshift(tracing.plugins.first);
    plugins.push(tracing.plugins.last);
  }
  return new Chain(plugins, { config, ...deps });
}

/** How often the sweeper looks for holds that outlived every request that could use them. */
const HOLD_SWEEP_INTERVAL_MS = 60_000;

/**
 * Holds end in the request's done hooks (and at restart); this is the safety net for a hold whose
 * end was missed. No request runs longer than upstream.max_request_ms, so a hold older than that
 * (plus one interval for the done hooks) is not in use: it is released, and the log says so,
 * because it means a bug.
 */
function startHoldSweeper(store: Store, config: () => GatewayConfig, clock: () => number, log: Logger, intervalMs: number): NodeJS.Timeout {
  const timer = setInterval(async () => {
    try {
      const ids = await store.ledger.releaseExpired(clock() - config().upstream.max_request_ms - intervalMs);
      if (ids.length) log('error', 'hold sweeper released holds that outlived their request', { count: ids.length, holds: ids.slice(0, 20) });
    } catch (err) {
      log('error', 'hold sweeper failed', { err });
    }
  }, intervalMs);
  timer.unref();
  return timer;
}

export async function startGateway(config: GatewayConfig, opts: GatewayOptions = {}): Promise<Gateway> {
  const stderr = new LogSink(process.stderr, config.log);
  const log = opts.log ?? createLogger(stderr);
  const requestLines = new LogSink(opts.requestLog ?? process.stdout, config.log, true);
  // The store first: when another process serves from the file, this one stops before starting anything.
  let store = opts.store;
  const ownsStore = !store;
  if (!store) {
    store = openStore(config, { clock: opts.clock, backgroundWriter: true, exclusive: true, pruneHistory: true, log, changePollMs: SERVING_CHANGE_POLL_MS, listenForChanges: true });
  }

  let simulator: Simulator | undefined;
  let metricsListener: MetricsListener | undefined;
  let tracing: Tracing | undefined;
  let server: GatewayServer | undefined;
  try {
    await store.sync(); // a networked store is reachable and migrated before anything starts
    const ensureSimulator = async (cfg: GatewayConfig) => {
      if (!simulator && cfg.providers.some((p) => p.simulated)) simulator = await startSimulator({ host: '127.0.0.1', port: 0 });
    };
    await ensureSimulator(config);

    const finished = opts.trackFinished ? new Finished() : undefined;
    let logRequests = config.log.requests;
    const ended = (ctx: RequestContext) => {
      if (logRequests) logRequest(requestLines, ctx);
      finished?.add(ctx.id);
    };
    tracing = config.tracing ? await startTracing(config.tracing, log) : undefined;
    // Outlives reloads: a run of failures goes on across a new chain.
    const failures = requestFailures(log);
    const transports = new Transports(config.upstream.max_sockets_per_provider);
    const breakers = new Breakers(config.breaker);
    const readiness: ReadinessDeps = { shuttingDown: () => server?.shuttingDown ?? false, store };
    // Off unless configured: then the chain keeps its no-op recorder.
    const metrics = config.metrics && new GatewayMetrics({
      config: () => current.config,
      store,
      breakers,
      requestsInFlight: () => server?.requestsInFlight ?? 0,
      notReady: () => notReady(readiness),
      keyLabels: config.metrics.key_labels,
    });
    if (metrics) store.writes?.observe(metrics.batches);
    const make = (cfg: GatewayConfig) => {
      const offersByModel = resolveOffers(cfg, simulator?.url);
      const chain = buildChain(cfg, { config: cfg, offersByModel, store, clock: opts.clock ?? Date.now, log }, { transports, breakers, log, metrics, failures, finished: ended }, tracing);
      return { config: cfg, offersByModel, chain };
    };
    let current = make(config);
    const dashboard = dashboardPages({ store, config: () => current.config, offers: () => current.offersByModel, log });

    if (metrics) metricsListener = await startMetricsListener(metrics, config.metrics!.host, config.metrics!.port, log);
    server = new GatewayServer({
      chain: () => current.chain,
      config: () => current.config.server,
      pages: [healthPages(readiness), openApiPage, dashboard, ...(opts.pages ?? [])],
      onError: (err, requestId) => log('error', 'unhandled request error', { request_id: requestId, err }),
    });
    const url = await server.listen(config.server.port, config.server.host);
    const listening = server;
    // After listening: a start that fails (its port in use) must not make the demo key it cannot print.
    const demo = config.demo.enabled ? await ensureDemoAccount(store, config.demo) : null;
    const sweeper = startHoldSweeper(store, () => current.config, opts.clock ?? Date.now, log, opts.holdSweepIntervalMs ?? HOLD_SWEEP_INTERVAL_MS);

    const gateway: Gateway = {
      url,
      metricsUrl: metricsListener?.url,
      log,
      tracing,
      config,
      store,
      simulator,
      demo,
      requestFinished(id) {
        if (!finished) throw new Error('requestFinished needs the trackFinished option');
        return finished.wait(id).then(requestLines.flush);
      },
      async reload(next) {
        await ensureSimulator(next);
        const made = make(next);
        breakers.reconfigure(next.breaker);
        if (next.server.port !== current.config.server.port || next.server.host !== current.config.server.host)
          log('warn', 'server.host/port changes need a restart; keeping the current address');
        if (JSON.stringify(next.metrics) !== JSON.stringify(current.config.metrics))
          log('warn', 'metrics changes need a restart; keeping the current metrics settings');
        if (JSON.stringify(next.tracing) !== JSON.stringify(current.config.tracing))
          log('warn', 'tracing changes need a restart; keeping the current tracing');
        stderr.configure(next.log);
        requestLines.configure(next.log);
        logRequests = next.log.requests;
        current = made;
        gateway.config = next;
      },
      async close() {
        clearInterval(sweeper);
        await listening.shutdown(current.config.server.shutdown_grace_ms);
        await metricsListener?.close();
        for (const p of current.chain.plugins) await p.close?.();
        transports.close();
        failures.close();
        requestLines.flush();
        await tracing?.close();
        if (ownsStore) await store!.close();
        await simulator?.close();
      },
    };
    return gateway;
  } catch (err) {
    // What was started must not outlive a failed start (the store holds the database's lock).
    if (server?.http.listening) await server.shutdown(0);
    await metricsListener?.close();
    await simulator?.close();
    await tracing?.close();
    if (ownsStore) await store.close();
    throw err;
  }
}
