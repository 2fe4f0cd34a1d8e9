// The plugin chain runner and the failover loop. Request hooks run in chain order; response,
// stream and done hooks in reverse. A GatewayError stops the chain and is rendered once, in the
// client's format. `onDone` runs exactly once per request for every plugin.
import { performance } from 'node:perf_hooks';
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { GatewayConfig, WireFormat } from './config-types.js';
import type { Offer, Outcome, RequestContext } from './context.js';
import { GatewayError, errorBody, errorEvent, toGatewayError, unavailable } from './errors.js';
import type { Plugin, StreamHook, UpstreamRequest } from './plugin.js';
import { StreamEvent } from './plugin.js';
import type { Transports, UpstreamCall, UpstreamResponse } from './proxy.js';
import type { Breakers } from './breaker.js';
import { SseEventTooLarge, SseParser, formatEvent } from './sse.js';
import { classifyEvent, credentialHeaders, endsStream, errorMessageOf, isErrorBody, retryAfterMsOf, upstreamErrorMessage, upstreamPath, vendorErrorOf } from './wire.js';
import { Scrubber } from './scrub.js';
import { HEAVY_BODY_BYTES, heavyWork } from './take-turns.js';
import type { Logger } from './log.js';
import { NO_METRICS, type MetricsRecorder } from './metrics/recorder.js';

/**
 * Upstream statuses that move the request to the next offer (before the first byte): the offer's
 * own trouble (its credentials, its credit, its model name, its load), not the client's request.
 */
const FAILOVER_STATUS = new Set([401, 402, 403, 404, 408, 409, 429]);
const isFailoverStatus = (s: number) => s >= 500 || s < 400 || FAILOVER_STATUS.has(s);

/**
 * An offer's own output ceiling, reported as a 400 (another offer may allow more): "max_tokens: 64001
 * > 64000, which is the maximum allowed…", "max_tokens is too large: … supports at most 16384…". Not
 * the client's own mistakes such as "max_tokens must be greater than thinking.budget_tokens".
 */
const OUTPUT_LIMIT_ERROR = /\b(max_tokens|max_completion_tokens|max_output_tokens)\b.*\b(too large|maximum allowed|at most|exceeds)/i;

/** Words an operator sees in history and the 503 message, instead of the upstream's own text (which can echo key fragments). */
function failureReason(status: number): string {
  if (status === 401 || status === 403) return `upstream ${status} (provider authentication or permission)`;
  if (status === 402) return 'upstream 402 (provider account out of credit)';
  if (status === 404) return 'upstream 404 (model or route not found at the provider)';
  if (status === 429) return 'upstream 429 (rate limited)';
  if (status < 400) return `upstream ${status} (unexpected status)`;
  return `upstream ${status}`;
}

/** Largest non-streamed upstream success body we accept (a JSON answer). */
const MAX_UPSTREAM_BODY = 64 * 1024 * 1024;
/** Error bodies are read only to find their message. */
const MAX_ERROR_BODY = 64 * 1024;
/** Upstream texts passed on (error messages, reasons) are cut to this many characters. */
const MAX_UPSTREAM_TEXT = 1000;
/** A vendor's error event larger than this is not passed through as it came, but told in our words. */
const MAX_PASSED_ERROR_EVENT = 16 * 1024;

/** Why an attempt failed, for history and for the 503 message. */
class AttemptFailed extends Error {
  constructor(
    readonly reason: string,
    readonly status?: number,
    /** The upstream's own Retry-After (ms), if it sent one. */
    readonly retryAfterMs?: number,
  ) {
    super(reason);
  }
}

class ClientGone extends Error {
  constructor() {
    super('client closed the connection');
  }
}

/** The request ran past upstream.max_request_ms: not the offer's fault, and no time is left for another. */
class DeadlineExceeded extends Error {
  constructor(readonly ms: number) {
    super(`the request took longer than ${ms} ms (upstream.max_request_ms)`);
  }
}

const timedOut = (e: DeadlineExceeded) =>
  new GatewayError(504, 'timeout_error', 'request_timeout', `The request was ended: it took longer than the gateway's limit of ${e.ms} ms.`);

export interface ChainDeps {
  config: GatewayConfig;
  transports: Transports;
  breakers: Breakers;
  log: Logger;
  /** Called after every onDone hook of a request ran (history written, hold ended). */
  finished?(ctx: RequestContext): void;
  /** Told of every request's end (default: metrics off). */
  metrics?: MetricsRecorder;
}

type AttemptResult = 'done' | AttemptFailed;

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string | number> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const payload = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
  });
  res.end(payload);
}

export function sendError(res: ServerResponse, ctx: Pick<RequestContext, 'clientFormat'>, err: GatewayError): void {
  const headers: Record<string, string | number> = {};
  if (err.retryAfter !== undefined) headers['retry-after'] = err.retryAfter;
  sendJson(res, err.status, errorBody(err, ctx.clientFormat), headers);
}

function addPluginHeaders(ctx: RequestContext, res: ServerResponse): void {
  const h = ctx.responseHeaders;
  if (h) for (const name in h) res.setHeader(name, h[name]);
}

export class Chain {
  private readonly reversed: Plugin[];
  /** Every upstream text that reaches a client, a log line or a history row goes through it. */
  private readonly scrubber: Scrubber;
  private readonly metrics: MetricsRecorder;

  constructor(
    readonly plugins: Plugin[],
    private readonly deps: ChainDeps,
  ) {
    this.reversed = [...plugins].reverse();
    this.scrubber = new Scrubber(deps.config.providers.map((p) => p.api_key));
    this.metrics = deps.metrics ?? NO_METRICS;
  }

  /** An upstream's text, scrubbed of secrets and cut to a length fit for a message. */
  private untrusted(text: string): string {
    return this.scrubber.scrub(text.length > MAX_UPSTREAM_TEXT ? text.slice(0, MAX_UPSTREAM_TEXT) + '…' : text);
  }

  /**
   * A vendor's error event after the stream committed, as the client gets it: the event as it came
   * (scrubbed) when the formats match, else the nearest error type of the client's format with the
   * vendor's message. The GatewayError is the request's error (history).
   */
  private vendorStreamError(upstream: WireFormat, client: WireFormat, ev: StreamEvent): [GatewayError, string] {
    const vendor = vendorErrorOf(upstream, ev.json);
    const err = new GatewayError(502, vendor.type, vendor.code ?? 'upstream_error', this.untrusted(vendor.message));
    if (upstream === client && ev.data.length <= MAX_PASSED_ERROR_EVENT) {
      const data = this.scrubber.scrub(ev.data);
      // Scrubbing could in principle cut through JSON syntax: then it is told in our words instead.
      if (isJson(data)) return [err, formatEvent({ event: ev.event, data })];
    }
    return [err, errorEvent(err, client)];
  }

  /** A network error's description (its message may quote the upstream). */
  private networkError(e: unknown): string {
    return this.untrusted(describeNetworkError(e));
  }

  /**
   * Run one request to its end. Never throws. `readBody` is called once the header hooks admitted
   * the request (absent: ctx.rawBody is already set).
   */
  async handle(ctx: RequestContext, res: ServerResponse, readBody?: () => Promise<Buffer>): Promise<void> {
    try {
      for (const p of this.plugins) {
        if (p.onHeaders) {
          const r = p.onHeaders(ctx);
          if (r) await r;
        }
      }
      if (readBody) ctx.rawBody = await readBody();
      // A large body's parse, validation and estimate each wait for a turn of their own.
      const heavy = ctx.rawBody.length >= HEAVY_BODY_BYTES;
      for (const p of this.plugins) {
        if (p.onRequest) {
          const r = heavy && p.bodyWork ? await heavyWork.run(() => p.onRequest!(ctx)) : p.onRequest(ctx);
          if (r) await r;
        }
      }
      addPluginHeaders(ctx, res);
      if (ctx.reply) {
        ctx.status = ctx.reply.status;
        sendJson(res, ctx.reply.status, ctx.reply.body);
      } else await this.proxy(ctx, res);
    } catch (e) {
      if (!(e instanceof ClientGone)) this.fail(ctx, res, e);
    }
    const outcome: Outcome = ctx.client.gone && !res.writableFinished ? 'client_gone' : ctx.error ? 'error' : 'ok';
    for (const p of this.reversed) {
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
    if (err.status >= 500 && !(e instanceof GatewayError)) this.deps.log('error', 'request failed', { request_id: ctx.id, err: e });
    ctx.error = err;
    if (!res.headersSent) {
      addPluginHeaders(ctx, res);
      ctx.status = err.status;
      sendError(res, ctx, err);
    } else if (!res.writableEnded) {
      res.end(errorEvent(err, ctx.clientFormat));
    }
  }

  /** Try the candidates in order until one answers; before the first byte only. */
  private async proxy(ctx: RequestContext, res: ServerResponse): Promise<void> {
    const { breakers } = this.deps;
    for (const offer of ctx.candidates) {
      if (ctx.client.gone) throw new ClientGone();
      if (!breakers.tryAcquire(offer.listing)) {
        ctx.attempts.push({ listing: offer.listing, outcome: 'skipped', reason: 'cooling down after repeated failures', durationMs: 0 });
        continue;
      }
      const started = performance.now();
      let result: AttemptResult;
      try {
        result = await this.attempt(ctx, res, offer);
      } catch (e) {
        // The attempt ended the request (client gone, the upstream judged the request bad, a broken
        // stream, a hook error). Only an upstream verdict on the request says the offer is healthy;
        // otherwise free a half-open trial slot (harmless after a counted failure).
        if (e instanceof GatewayError && e.code === 'upstream_rejected') breakers.success(offer.listing);
        else breakers.abandon(offer.listing);
        if (!ctx.attempts.some((a) => a.listing === offer.listing && a.outcome === 'ok'))
          ctx.attempts.push({
            listing: offer.listing,
            outcome: 'failed',
            status: e instanceof GatewayError ? e.status : undefined,
            reason: (e as Error).message,
            durationMs: performance.now() - started,
          });
        throw e;
      }
      const durationMs = performance.now() - started;
      if (result === 'done') {
        ctx.attempts.push({ listing: offer.listing, outcome: 'ok', status: 200, durationMs });
        return;
      }
      breakers.failure(offer.listing, result.retryAfterMs);
      ctx.attempts.push({ listing: offer.listing, outcome: 'failed', status: result.status, reason: result.reason, durationMs });
    }
    // The soonest any offer may answer: a cooldown's end or an upstream's own Retry-After.
    const waitMs = ctx.candidates.length ? Math.min(...ctx.candidates.map((o) => breakers.reopensIn(o.listing))) : 0;
    const tried = ctx.attempts.map((a) => `${a.listing}: ${a.reason ?? a.outcome}`).join('; ');
    throw unavailable(
      'no_offer_available',
      tried
        ? `No offer for model ${ctx.model?.id ?? ctx.body.model} could serve this request (${tried}). Retry later.`
        : `No offer for model ${ctx.model?.id ?? ctx.body.model} is available for this request. Retry later.`,
      Math.max(1, Math.ceil(waitMs / 1000)),
    );
  }

  private buildUpstream(ctx: RequestContext, offer: Offer): UpstreamRequest {
    const format = offer.provider.format;
    const up: UpstreamRequest = { offer, format, path: upstreamPath(format, ctx.route), body: ctx.body, headers: {} };
    for (const p of this.plugins) p.onAttempt?.(ctx, up);
    if (up.body === ctx.body) up.body = { ...ctx.body }; // never change the client's body: failover reuses it
    up.body.model = offer.upstreamModel;
    return up;
  }

  private send(ctx: RequestContext, res: ServerResponse, up: UpstreamRequest): UpstreamCall {
    const payload = Buffer.from(JSON.stringify(up.body));
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'content-length': String(payload.length),
      accept: ctx.stream ? 'text/event-stream' : 'application/json',
      'user-agent': 'llm-gateway/0.1',
      ...up.headers,
      ...credentialHeaders(up.offer.provider),
    };
    return this.deps.transports.send({ provider: up.offer.provider, path: up.path, headers, body: payload }, res);
  }

  /** One offer. Resolves 'done' when the answer was sent, or the failure to fail over from. */
  private async attempt(ctx: RequestContext, res: ServerResponse, offer: Offer): Promise<AttemptResult> {
    const up = this.buildUpstream(ctx, offer);
    const call = this.send(ctx, res, up);
    ctx.client.onGone(() => call.abort(new ClientGone()));
    const { first_byte_timeout_ms, max_request_ms } = this.deps.config.upstream;
    const timer = setTimeout(() => call.abort(new AttemptFailed(`no response headers within ${first_byte_timeout_ms} ms`)), first_byte_timeout_ms);
    const left = ctx.startedAt + max_request_ms - performance.now();
    const deadline = setTimeout(() => call.abort(new DeadlineExceeded(max_request_ms)), Math.max(0, left));
    try {
      let upRes: UpstreamResponse;
      try {
        upRes = await call.response;
      } catch (e) {
        if (ctx.client.gone) throw new ClientGone();
        if (e instanceof DeadlineExceeded) throw timedOut(e);
        return e instanceof AttemptFailed ? e : new AttemptFailed(this.networkError(e));
      } finally {
        clearTimeout(timer);
      }
      if (upRes.status < 200 || upRes.status > 299) return await this.upstreamError(ctx, call, up, upRes);
      if (!ctx.stream) return await this.whole(ctx, res, call, up, upRes);
      const type = String(upRes.headers['content-type'] ?? '');
      if (!type.includes('text/event-stream')) {
        call.abort(new AttemptFailed('not a stream'));
        return new AttemptFailed(`upstream answered a stream request with ${type ? this.untrusted(type) : 'no content type'}`);
      }
      return await this.stream(ctx, res, call, up, upRes.body);
    } finally {
      clearTimeout(deadline);
      ctx.client.onGone(undefined);
    }
  }

  /** Read a whole upstream body, failing on idle timeout, size or reset. */
  private readAll(ctx: RequestContext, call: UpstreamCall, body: Readable, limit = MAX_UPSTREAM_BODY): Promise<Buffer> {
    const idleMs = this.deps.config.upstream.idle_timeout_ms;
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let timer = setTimeout(onIdle, idleMs);
      function onIdle() {
        call.abort(new AttemptFailed(`upstream body idle for ${idleMs} ms`));
      }
      body.on('data', (c: Buffer) => {
        size += c.length;
        if (size > limit) return call.abort(new AttemptFailed('upstream body too large'));
        chunks.push(c);
        timer.refresh();
      });
      body.once('end', () => {
        clearTimeout(timer);
        resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
      });
      body.once('error', (e) => {
        clearTimeout(timer);
        reject(ctx.client.gone ? new ClientGone() : e instanceof AttemptFailed || e instanceof DeadlineExceeded ? e : new AttemptFailed(`upstream body: ${this.networkError(e)}`));
      });
      body.once('close', () => {
        if (!body.readableEnded) {
          clearTimeout(timer);
          reject(ctx.client.gone ? new ClientGone() : new AttemptFailed('upstream connection closed before the body ended'));
        }
      });
    });
  }

  private async upstreamError(ctx: RequestContext, call: UpstreamCall, up: UpstreamRequest, upRes: UpstreamResponse): Promise<AttemptResult> {
    let text = '';
    try {
      text = (await this.readAll(ctx, call, upRes.body, MAX_ERROR_BODY)).toString('utf8');
    } catch (e) {
      if (e instanceof ClientGone) throw e;
      if (e instanceof DeadlineExceeded) throw timedOut(e);
    }
    const message = this.untrusted(upstreamErrorMessage(text));
    if (isFailoverStatus(upRes.status) || (upRes.status === 400 && OUTPUT_LIMIT_ERROR.test(message))) {
      this.deps.log('warn', 'upstream attempt failed', { request_id: ctx.id, listing: up.offer.listing, status: upRes.status, upstream_message: message });
      return new AttemptFailed(upRes.status === 400 ? 'upstream 400 (output limit of this offer)' : failureReason(upRes.status), upRes.status, retryAfterMsOf(upRes.headers));
    }
    // The upstream judged the request itself bad: that is the client's answer, in the client's format.
    throw new GatewayError(upRes.status, upRes.status === 413 ? 'request_too_large' : 'invalid_request_error', 'upstream_rejected', `The upstream provider rejected the request: ${message}`);
  }

  private async whole(ctx: RequestContext, res: ServerResponse, call: UpstreamCall, up: UpstreamRequest, upRes: UpstreamResponse): Promise<AttemptResult> {
    let raw: Buffer;
    try {
      raw = await this.readAll(ctx, call, upRes.body);
    } catch (e) {
      if (e instanceof ClientGone) throw e;
      if (e instanceof DeadlineExceeded) throw timedOut(e);
      return e as AttemptFailed;
    }
    let body: any;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return new AttemptFailed('upstream answered with a body that is not JSON');
    }
    if (body === null || typeof body !== 'object') return new AttemptFailed('upstream answered with a body that is not a JSON object');
    if (isErrorBody(up.format, body)) {
      return new AttemptFailed(`upstream ${upRes.status} with an error body: ${this.untrusted(errorMessageOf(body) ?? 'no message')}`, upRes.status);
    }
    for (const p of this.reversed) {
      if (!p.onResponseBody) continue;
      const r = p.onResponseBody(ctx, body, up);
      if (r !== undefined) body = r;
    }
    this.deps.breakers.success(up.offer.listing);
    ctx.offer = up.offer;
    ctx.status = 200;
    ctx.firstByteAt = performance.now();
    sendJson(res, 200, body, { 'x-service-listing': up.offer.listing });
    return 'done';
  }

  /**
   * Relay an SSE stream event by event. Nothing reaches the client until the stream commits (first
   * output event or the commit timeout); until then any failure moves on to the next offer.
   */
  private stream(ctx: RequestContext, res: ServerResponse, call: UpstreamCall, up: UpstreamRequest, body: Readable): Promise<AttemptResult> {
    const { idle_timeout_ms, commit_timeout_ms } = this.deps.config.upstream;
    const hooks: StreamHook[] = [];
    for (const p of this.reversed) {
      const h = p.onStream?.(ctx, up);
      if (h) hooks.push(h);
    }
    const parser = new SseParser();
    const clientFormat = ctx.clientFormat;
    let committed = false;
    let pending = '';
    let sawEvent = false;
    let sawEnd = false;
    let settled = false;

    return new Promise<AttemptResult>((resolve, reject) => {
      const idle = setTimeout(() => fail(`upstream stream idle for ${idle_timeout_ms} ms`), idle_timeout_ms);
      const commitTimer = setTimeout(() => commit(), commit_timeout_ms);

      const finish = (result: AttemptResult | Error, ok: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(idle);
        clearTimeout(commitTimer);
        res.off('drain', onDrain);
        if (ok) resolve(result as AttemptResult);
        else reject(result);
      };

      const write = (text: string) => {
        if (!text) return;
        if (!committed) {
          pending += text;
          return;
        }
        if (!res.write(text)) {
          // The client reads slowly: we hold the upstream back, so its silence is not its fault.
          body.pause();
          clearTimeout(idle);
        }
      };
      const onDrain = () => {
        idle.refresh();
        body.resume();
      };
      res.on('drain', onDrain);

      function commit() {
        if (committed || settled) return;
        committed = true;
        clearTimeout(commitTimer);
        ctx.offer = up.offer;
        ctx.status = 200;
        res.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache',
          'x-service-listing': up.offer.listing,
        });
        ctx.firstByteAt = performance.now();
        const text = pending;
        pending = '';
        if (text) res.write(text);
        else res.flushHeaders();
      }

      /** Pass events through hooks[from..]; the text that comes out, in SSE framing. */
      const run = (evs: StreamEvent[], from: number): string => {
        let cur = evs;
        for (let i = from; i < hooks.length && cur.length > 0; i++) {
          if (cur.length === 1) {
            // The common case: one event in, the same or one event out.
            const out = hooks[i].onEvent(cur[0]);
            cur = out === undefined ? [] : Array.isArray(out) ? out : out === cur[0] ? cur : [out];
            continue;
          }
          const next: StreamEvent[] = [];
          for (const ev of cur) {
            const out = hooks[i].onEvent(ev);
            if (out === undefined) continue;
            if (Array.isArray(out)) next.push(...out);
            else next.push(out);
          }
          cur = next;
        }
        let text = '';
        for (const ev of cur) text += formatEvent(ev);
        return text;
      };

      /** `vendorError`: the upstream's own error event, which the client then hears about. */
      const fail = (reason: string, vendorError?: StreamEvent) => {
        if (settled) return;
        call.abort(new AttemptFailed(reason));
        if (ctx.client.gone) return finish(new ClientGone(), false);
        if (!committed) return finish(new AttemptFailed(reason), true);
        // After the first byte the offer is fixed: tell the client in its own format and end.
        this.deps.breakers.failure(up.offer.listing);
        if (vendorError) endWith(...this.vendorStreamError(up.format, clientFormat, vendorError));
        else endWith(new GatewayError(502, 'api_error', 'upstream_stream_error', `The upstream stream broke: ${reason}`));
      };

      /** The request is out of time: no other offer, no breaker failure (the offer did nothing wrong). */
      const expire = (e: DeadlineExceeded) => {
        if (settled) return;
        const err = timedOut(e);
        if (!committed) return finish(err, false);
        endWith(err);
      };

      /** End a committed stream with one error event in the client's format (`event`: already framed). */
      const endWith = (err: GatewayError, event = errorEvent(err, clientFormat)) => {
        ctx.error = err;
        res.end(event);
        finish(err, false);
      };

      /** A hook threw: a gateway bug, not an upstream fault. End the request with a 500 / error event. */
      const hookFailed = (e: unknown) => {
        call.abort(new AttemptFailed('stream hook failed'));
        finish(e instanceof Error ? e : new Error(String(e)), false);
      };

      body.on('data', (chunk: Buffer) => {
        if (settled) return;
        idle.refresh();
        // The events of one upstream chunk leave in one write (one syscall, not one per event).
        let out = '';
        try {
          for (const raw of parser.push(chunk)) {
            const ev = new StreamEvent(raw);
            const kind = classifyEvent(up.format, ev);
            if (kind === 'error') {
              write(out);
              return fail(`upstream error event: ${this.untrusted(vendorErrorOf(up.format, ev.json).message)}`, ev);
            }
            if (kind === 'malformed') {
              write(out);
              return fail('upstream sent a malformed event');
            }
            sawEvent = true;
            if (!sawEnd && endsStream(up.format, ev)) sawEnd = true;
            // Before the commit, `out` goes to `pending` after what is there: the order holds.
            if (kind === 'output' && !committed) commit();
            out += run([ev], 0);
          }
          write(out);
        } catch (e) {
          write(out);
          if (e instanceof SseEventTooLarge) fail(`upstream sent ${e.message}`);
          else hookFailed(e);
        }
      });
      body.once('end', () => {
        if (settled) return;
        try {
          parser.end();
          if (!sawEvent) return fail('upstream stream ended without any event');
          // A clean close before the format's last event is a cut-off answer, not a complete one.
          if (!sawEnd) return fail('upstream stream ended before its final event');
          for (let i = 0; i < hooks.length; i++) {
            const tail = hooks[i].onEnd?.();
            if (tail && tail.length) write(run(tail, i + 1));
          }
        } catch (e) {
          return hookFailed(e);
        }
        commit();
        this.deps.breakers.success(up.offer.listing);
        res.end();
        finish('done', true);
      });
      body.once('error', (e) => {
        if (e instanceof DeadlineExceeded) expire(e);
        else fail(e instanceof AttemptFailed ? e.reason : this.networkError(e));
      });
      body.once('close', () => {
        if (!body.readableEnded) fail('upstream connection closed mid-stream');
      });
    });
  }
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function describeNetworkError(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  if (err?.code) return `${err.code}${err.message && !err.message.includes(err.code) ? ` (${err.message})` : ''}`;
  return err?.message ?? String(e);
}
