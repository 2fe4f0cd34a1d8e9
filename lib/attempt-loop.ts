// The attempt loop (the router, in Envoy's terms): the request's offers in order, each one upstream
// attempt with its timers and breaker, failing over to the next offer until the first byte reaches
// the client, and each attempt's line in ctx.attempts. A non-stream answer is read whole here; a
// stream answer goes to the stream relay.
import { performance } from 'node:perf_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { GatewayConfig } from './config-types.js';
import type { Offer, RequestContext } from './context.js';
import { GatewayError, unavailable } from './errors.js';
import { AnswerText, type Plugin, type UpstreamRequest } from './plugin.js';
import { headerOf, type Transports, type UpstreamCall, type UpstreamResponse } from './proxy.js';
import type { Breakers } from './breaker.js';
import type { Logger } from './log.js';
import { credentialHeaders, errorMessageOf, isErrorBody, retryAfterMsOf, upstreamErrorMessage, upstreamPath } from './wire.js';
import { sendJson } from './reply.js';
import { takeBuffered } from './body.js';
import { StreamRelay } from './stream-relay.js';
import { clientMembers, payloadOf, upstreamPayload } from './upstream-payload.js';
import { AttemptFailed, ClientGone, DeadlineExceeded, timedOut, type AttemptResult, type UpstreamText } from './attempt-errors.js';

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

/**
 * The whole body, when it came with the head (a small answer arrives in the packet that carries
 * its head, and Node has parsed it all before the head's promise is taken up): out of the
 * response's buffer at once, as BodyReader takes a request's, instead of through a 'data' and an
 * 'end' event a tick apart, an idle timer and four listeners. Undefined otherwise (read as it comes).
 */
function bodyAtHand(body: Readable, limit: number): Buffer | undefined {
  if ((body as IncomingMessage).complete !== true || body.readableFlowing !== null || body.readableLength > limit) return undefined;
  return takeBuffered(body);
}

export interface AttemptDeps {
  config: GatewayConfig;
  transports: Transports;
  breakers: Breakers;
  log: Logger;
}

export class AttemptLoop {
  private readonly reversed: Plugin[];
  private readonly relay: StreamRelay;

  constructor(
    private readonly plugins: Plugin[],
    private readonly deps: AttemptDeps,
    private readonly text: UpstreamText,
  ) {
    this.reversed = [...plugins].reverse();
    this.relay = new StreamRelay(this.reversed, deps.config, deps.breakers, text);
  }

  /** Try the candidates in order until one answers; before the first byte only. */
  async run(ctx: RequestContext, res: ServerResponse): Promise<void> {
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
    const payload = ctx.bodyText !== undefined && up.format === ctx.clientFormat ? upstreamPayload(up.body, ctx.body, ctx.bodyText, clientMembers(ctx)) : payloadOf([JSON.stringify(up.body)]);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'content-length': String(typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length),
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
        return e instanceof AttemptFailed ? e : new AttemptFailed(this.text.networkError(e));
      } finally {
        clearTimeout(timer);
      }
      if (upRes.status < 200 || upRes.status > 299) return await this.upstreamError(ctx, call, up, upRes);
      if (!ctx.stream) return await this.whole(ctx, res, call, up, upRes);
      const type = headerOf(upRes, 'content-type') ?? '';
      if (!type.includes('text/event-stream')) {
        call.abort(new AttemptFailed('not a stream'));
        return new AttemptFailed(`upstream answered a stream request with ${type ? this.text.untrusted(type) : 'no content type'}`);
      }
      return await this.relay.relay(ctx, res, call, up, upRes.body);
    } finally {
      clearTimeout(deadline);
      ctx.client.onGone(undefined);
    }
  }

  /** Read a whole upstream body, failing on idle timeout, size or reset. */
  private readAll(ctx: RequestContext, call: UpstreamCall, body: Readable, limit = MAX_UPSTREAM_BODY): Promise<Buffer> {
    const atHand = bodyAtHand(body, limit);
    if (atHand) return Promise.resolve(atHand);
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
        reject(ctx.client.gone ? new ClientGone() : e instanceof AttemptFailed || e instanceof DeadlineExceeded ? e : new AttemptFailed(`upstream body: ${this.text.networkError(e)}`));
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
    const message = this.text.untrusted(upstreamErrorMessage(text));
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
    const text = raw.toString('utf8');
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      return new AttemptFailed('upstream answered with a body that is not JSON');
    }
    if (body === null || typeof body !== 'object') return new AttemptFailed('upstream answered with a body that is not a JSON object');
    if (isErrorBody(up.format, body)) {
      return new AttemptFailed(`upstream ${upRes.status} with an error body: ${this.text.untrusted(errorMessageOf(body) ?? 'no message')}`, upRes.status);
    }
    // What the client gets: the body serialized, unless a hook answered with the text itself.
    let answer: string | undefined;
    for (const p of this.reversed) {
      if (!p.onResponseBody) continue;
      const r = p.onResponseBody(ctx, body, up, text);
      if (r instanceof AnswerText) answer = r.text;
      else if (r !== undefined) {
        body = r;
        answer = undefined;
      }
    }
    this.deps.breakers.success(up.offer.listing);
    ctx.offer = up.offer;
    ctx.status = 200;
    ctx.firstByteAt = performance.now();
    sendJson(res, 200, answer ?? body, ctx.head, ['x-service-listing', up.offer.listing]);
    return 'done';
  }
}
