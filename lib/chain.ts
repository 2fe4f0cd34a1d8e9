// The plugin chain runner (the filter manager, in Envoy's terms). Request hooks run in chain order;
// response, stream and done hooks in reverse. A GatewayError stops the chain and is rendered once,
// in the client's format. `onDone` runs exactly once per request for every plugin. The upstream
// attempts themselves (failover, breakers, the stream relay) are the attempt loop's.
import type { ServerResponse } from 'node:http';
import type { GatewayConfig } from './config-types.js';
import type { Outcome, RequestContext } from './context.js';
import { GatewayError, errorEvent, toGatewayError } from './errors.js';
import type { Plugin } from './plugin.js';
import type { Transports } from './proxy.js';
import type { Breakers } from './breaker.js';
import { Scrubber } from './scrub.js';
import { HEAVY_BODY_BYTES, heavyWork } from './take-turns.js';
import type { Logger } from './log.js';
import { NO_METRICS, type MetricsRecorder } from './metrics/recorder.js';
import { FailureRun } from './log-run.js';
import { addPluginHeaders, sendError, sendJson } from './reply.js';
import { AttemptLoop } from './attempt-loop.js';
import { ClientGone, UpstreamText } from './attempt-errors.js';

export { sendError, sendJson } from './reply.js';

export interface ChainDeps {
  config: GatewayConfig;
  transports: Transports;
  breakers: Breakers;
  log: Logger;
  /**
   * Unexpected 5xx errors (not a GatewayError): the first of a run is logged, the others counted
   * (a database outage fails every request). Default: a run of this chain's own.
   */
  failures?: FailureRun;
  /** Called after every onDone hook of a request ran (history written, hold ended). */
  finished?(ctx: RequestContext): void;
  /** Told of every request's end (default: metrics off). */
  metrics?: MetricsRecorder;
}

/** The log's record of unexpected request failures (ChainDeps.failures). */
export const requestFailures = (log: Logger) => new FailureRun(log, { first: 'request failed', again: 'more requests failed with an unexpected error' });

export class Chain {
  private readonly reversed: Plugin[];
  private readonly attempts: AttemptLoop;
  private readonly metrics: MetricsRecorder;
  private readonly failures: FailureRun;

  constructor(
    readonly plugins: Plugin[],
    private readonly deps: ChainDeps,
  ) {
    this.reversed = [...plugins].reverse();
    const text = new UpstreamText(new Scrubber(deps.config.providers.map((p) => p.api_key)));
    this.attempts = new AttemptLoop(plugins, deps, text);
    this.metrics = deps.metrics ?? NO_METRICS;
    this.failures = deps.failures ?? requestFailures(deps.log);
  }

  /**
   * Run one request to its end. Never throws. `readBody` is called once the header hooks admitted
   * the request (absent: ctx.rawBody is already set).
   */
  async handle(ctx: RequestContext, res: ServerResponse, readBody?: () => Promise<Buffer>): Promise<void> {
    // Index loops, not for-of: an iterator that lives across an await is allocated, with its every
    // step's result (the three loops: 3.4 of the 71 KB a request allocated, --trace-gc-nvp).
    const plugins = this.plugins;
    try {
      for (let i = 0; i < plugins.length; i++) {
        const p = plugins[i];
        if (p.onHeaders) {
          const r = p.onHeaders(ctx);
          if (r) await r;
        }
      }
      if (readBody) ctx.rawBody = await readBody();
      // A large body's parse, validation and estimate each wait for a turn of their own.
      const heavy = ctx.rawBody.length >= HEAVY_BODY_BYTES;
      for (let i = 0; i < plugins.length; i++) {
        const p = plugins[i];
        if (p.onRequest) {
          const r = heavy && p.bodyWork ? await heavyWork.run(() => p.onRequest!(ctx)) : p.onRequest(ctx);
          if (r) await r;
        }
      }
      addPluginHeaders(ctx);
      if (ctx.reply) {
        ctx.status = ctx.reply.status;
        sendJson(res, ctx.reply.status, ctx.reply.body, ctx.head);
      } else await this.attempts.run(ctx, res);
    } catch (e) {
      if (!(e instanceof ClientGone)) this.fail(ctx, res, e);
    }
    const outcome: Outcome = ctx.client.gone && !res.writableFinished ? 'client_gone' : ctx.error ? 'error' : 'ok';
    const reversed = this.reversed;
    for (let i = 0; i < reversed.length; i++) {
      const p = reversed[i];
      if (!p.onDone) continue;
      try {
        const r = p.onDone(ctx, outcome);
        if (r) await r;
      } catch (e) {
        this.deps.log('error', 'onDone hook failed', { plugin: p.name, request_id: ctx.id, err: e });
      }
    }
    // Metrics: the request's counts, latencies, attempts, tokens and charge.
    this.metrics.requestEnded(ctx);
    this.deps.finished?.(ctx);
  }

  private fail(ctx: RequestContext, res: ServerResponse, e: unknown): void {
    const err = toGatewayError(e);
    if (err.status >= 500 && !(e instanceof GatewayError)) this.failures.failed(e, { request_id: ctx.id });
    ctx.error = err;
    if (!res.headersSent) {
      addPluginHeaders(ctx);
      ctx.status = err.status;
      sendError(res, ctx, err);
    } else if (!res.writableEnded) {
      res.end(errorEvent(err, ctx.clientFormat));
    }
  }
}
