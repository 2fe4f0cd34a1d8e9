// The gateway's Prometheus metrics (prom-client's registry, formats and process metrics), and the
// recorder the chain calls once per request. Label values come from bounded sets only: routes,
// configured model ids and listings, status classes, fixed reason words, and key ids when the
// operator asks for them. The request path adds to series cells (families.ts) found once per
// label combination and cached in nested maps, so a request builds no label object and no string.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { performance } from 'node:perf_hooks';
import type { GatewayConfig } from '../config-types.js';
import type { RequestContext, Route } from '../context.js';
import type { Breakers } from '../breaker.js';
import type { BatchObserver, Store } from '../store/types.js';
import { attemptReason } from './attempt-reason.js';
import { CounterFamily, HistogramFamily } from './families.js';
import type { MetricsRecorder } from './recorder.js';

/** Seconds: from a tenth of a millisecond (the gateway's own overhead) to minutes (long answers). */
export const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const COMMIT_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Token classes as labels, in the order requestEnded adds them (ModelSeries.tokens). */
const TOKEN_CLASSES = ['input', 'output', 'cache_read', 'cache_write_5m', 'cache_write_1h'] as const;
/** Status classes by hundreds; index 0: nothing was sent (the client left first). */
const STATUS_CLASSES = ['none', '1xx', '2xx', '3xx', '4xx', '5xx'];
/** Model label of a request that named no configured model (an unknown id must not make a series). */
const NO_MODEL = 'none';
const NO_LISTING = 'none';
/** Distinct 402/429 reasons kept apart; more (should a code ever come from outside) count as "other". */
const MAX_REFUSAL_REASONS = 32;

export interface GatewayMetricsDeps {
  config(): GatewayConfig;
  store: Store;
  breakers: Breakers;
  requestsInFlight(): number;
  /** Null when ready, else why not (see health.ts). */
  notReady(): string | null;
  keyLabels: boolean;
}

type Inc = { inc(n?: number): void };
type Observe = { observe(v: number): void };

/** Children of one model's series. */
interface ModelSeries {
  id: string;
  tokens: Inc[];
  charged: Inc;
  failovers: Inc;
  byRoute: Map<Route, RouteSeries>;
}

interface RouteSeries {
  duration: Observe;
  ttfb: Observe;
  /** Request counters by listing, then by status class index (made on first use). */
  byListing: Map<string, Inc[]>;
}

interface ListingSeries {
  ok: Inc;
  failed: Map<string, Inc>;
}

export class GatewayMetrics implements MetricsRecorder {
  readonly registry = new Registry();
  private readonly requests: CounterFamily;
  private readonly duration: HistogramFamily;
  private readonly ttfb: HistogramFamily;
  private readonly attempts: CounterFamily;
  private readonly failovers: CounterFamily;
  private readonly tokens: CounterFamily;
  private readonly charged: CounterFamily;
  private readonly refusals: CounterFamily;
  private readonly keyRequests?: CounterFamily;
  private readonly keyCharged?: CounterFamily;
  private readonly models = new Map<string, ModelSeries>();
  private readonly listings = new Map<string, ListingSeries>();
  private readonly refusalReasons = new Map<string, Inc>();
  private readonly keys = new Map<number, { requests: Inc; charged: Inc }>();
  /** For the store's batches (WriteBatcher.observe). */
  readonly batches: BatchObserver;

  constructor(deps: GatewayMetricsDeps) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });

    const reg = this.registry;
    this.requests = new CounterFamily('gateway_requests_total', 'Requests by route, model, serving listing and status class.', ['route', 'model', 'listing', 'status'], reg);
    this.duration = new HistogramFamily('gateway_request_duration_seconds', 'From arrival to the end of the request (the last byte, or the failure).', ['route', 'model'], LATENCY_BUCKETS, reg);
    this.ttfb = new HistogramFamily('gateway_time_to_first_byte_seconds', 'From arrival to the first byte of a served answer.', ['route', 'model'], LATENCY_BUCKETS, reg);
    this.attempts = new CounterFamily('gateway_upstream_attempts_total', 'Upstream attempts by listing and outcome (ok, failed, skipped by the breaker), with the reason of a failure.', ['listing', 'outcome', 'reason'], reg);
    this.failovers = new CounterFamily('gateway_failovers_total', 'Moves of a request from one offer to the next (after a failure, or past an open breaker).', ['model'], reg);
    this.tokens = new CounterFamily('gateway_tokens_total', 'Tokens charged, by model and class.', ['model', 'class'], reg);
    this.charged = new CounterFamily('gateway_charged_nano_usd_total', 'Credit charged for requests, in nano-USD (1e-9 USD).', ['model'], reg);
    this.refusals = new CounterFamily('gateway_refusals_total', '402 and 429 answers by status and reason (the error code).', ['status', 'reason'], reg);
    if (deps.keyLabels) {
      this.keyRequests = new CounterFamily('gateway_key_requests_total', 'Requests by API key id (metrics.key_labels).', ['key_id'], reg);
      this.keyCharged = new CounterFamily('gateway_key_charged_nano_usd_total', 'Credit charged by API key id, in nano-USD (metrics.key_labels).', ['key_id'], reg);
    }

    // Read at scrape time: nothing on the request path.
    new Gauge({
      name: 'gateway_breaker_state', help: 'Circuit breaker per listing: 0 closed, 1 open (skipped while cooling down), 2 half-open (a trial may run).', labelNames: ['listing'], registers,
      collect() {
        this.reset(); // listings removed by a reload disappear
        for (const o of deps.config().offers) this.labels(o.listing).set(deps.breakers.state(o.listing));
      },
    });
    new Gauge({ name: 'gateway_requests_in_flight', help: 'Requests being handled now.', registers, collect() { this.set(deps.requestsInFlight()); } });
    new Gauge({ name: 'gateway_ready', help: '1 when /readyz answers 200, else 0.', registers, collect() { this.set(deps.notReady() === null ? 1 : 0); } });
    new Gauge({ name: 'gateway_holds_open', help: "Credit holds open in this process (requests in flight).", registers, collect() { this.set(deps.store.ledger.openHolds?.().count ?? 0); } });
    new Gauge({ name: 'gateway_held_nano_usd', help: 'Credit held by the open holds of this process, in nano-USD.', registers, collect() { this.set(deps.store.ledger.openHolds?.().nano ?? 0); } });
    new Gauge({ name: 'gateway_store_rows_waiting', help: 'Rows queued or in flight to the database (the ledger refuses new holds at its bound).', registers, collect() { this.set(deps.store.writes?.unwritten() ?? 0); } });
    const commits = new Histogram({ name: 'gateway_store_batch_commit_seconds', help: 'Time to write one batch of rows (one transaction).', buckets: COMMIT_BUCKETS, registers });
    const failed = new Counter({ name: 'gateway_store_batches_failed_total', help: 'Batches the database refused or failed (their rows stay queued and are retried).', registers });
    this.batches = { committed: (s) => commits.observe(s), failed: () => failed.inc() };
  }

  /** The text a scrape gets. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  requestEnded(ctx: RequestContext): void {
    const model = this.model(ctx.model?.id ?? NO_MODEL);
    const route = this.route(model, ctx.route);
    const listing = ctx.offer?.listing ?? NO_LISTING;
    let byStatus = route.byListing.get(listing);
    if (!byStatus) route.byListing.set(listing, (byStatus = []));
    const status = ctx.status ?? 0;
    const cls = status >= 100 && status < 600 ? Math.floor(status / 100) : 0;
    (byStatus[cls] ??= this.requests.cell(ctx.route, model.id, listing, STATUS_CLASSES[cls])).inc();

    const now = performance.now();
    route.duration.observe((now - ctx.startedAt) / 1000);
    if (ctx.firstByteAt !== undefined) route.ttfb.observe((ctx.firstByteAt - ctx.startedAt) / 1000);

    const u = ctx.usage;
    if (u) {
      if (u.input) model.tokens[0].inc(u.input);
      if (u.output) model.tokens[1].inc(u.output);
      if (u.cacheRead) model.tokens[2].inc(u.cacheRead);
      if (u.cacheWrite > u.cacheWrite1h) model.tokens[3].inc(u.cacheWrite - u.cacheWrite1h);
      if (u.cacheWrite1h) model.tokens[4].inc(u.cacheWrite1h);
    }
    const charged = ctx.chargedNano ?? 0;
    if (charged > 0) model.charged.inc(charged);

    const attempts = ctx.attempts;
    for (let i = 0; i < attempts.length; i++) {
      const a = attempts[i];
      const series = this.listing(a.listing);
      if (a.outcome === 'ok') series.ok.inc();
      else {
        const outcome = a.outcome;
        const reason = attemptReason(a);
        let child = series.failed.get(reason + outcome);
        if (!child) series.failed.set(reason + outcome, (child = this.attempts.cell(a.listing, outcome, reason)));
        child.inc();
      }
    }
    if (attempts.length > 1) model.failovers.inc(attempts.length - 1);

    if (status === 402 || status === 429) this.refusal(status, ctx.error?.code ?? 'unknown').inc();

    if (this.keyRequests && ctx.auth) {
      const id = ctx.auth.keyId;
      let key = this.keys.get(id);
      if (!key) this.keys.set(id, (key = { requests: this.keyRequests.cell(String(id)), charged: this.keyCharged!.cell(String(id)) }));
      key.requests.inc();
      if (charged > 0) key.charged.inc(charged);
    }
  }

  private model(id: string): ModelSeries {
    let m = this.models.get(id);
    if (!m) {
      m = {
        id,
        tokens: TOKEN_CLASSES.map((c) => this.tokens.cell(id, c)),
        charged: this.charged.cell(id),
        failovers: this.failovers.cell(id),
        byRoute: new Map(),
      };
      this.models.set(id, m);
    }
    return m;
  }

  private route(model: ModelSeries, route: Route): RouteSeries {
    let r = model.byRoute.get(route);
    if (!r) {
      r = { duration: this.duration.cell(route, model.id), ttfb: this.ttfb.cell(route, model.id), byListing: new Map() };
      model.byRoute.set(route, r);
    }
    return r;
  }

  private listing(listing: string): ListingSeries {
    let l = this.listings.get(listing);
    if (!l) this.listings.set(listing, (l = { ok: this.attempts.cell(listing, 'ok', 'none'), failed: new Map() }));
    return l;
  }

  private refusal(status: number, code: string): Inc {
    const key = `${status} ${code}`;
    let child = this.refusalReasons.get(key);
    if (!child) {
      const reason = this.refusalReasons.size < MAX_REFUSAL_REASONS ? code : 'other';
      child = this.refusals.cell(String(status), reason);
      if (reason !== 'other') this.refusalReasons.set(key, child);
    }
    return child;
  }
}
