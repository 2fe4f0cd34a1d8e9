// The spans of one request: a SERVER span for the request (child of the client's `traceparent`,
// when it sent one) and a CLIENT span per upstream attempt, whose context goes to the upstream in
// `traceparent`. Attributes follow the OpenTelemetry GenAI and HTTP semantic conventions; never a
// key, a prompt or an answer.
//
// Two internal plugins carry them, so the chain needs no tracing code: `tracing` runs first (its
// onHeaders starts the request span before any other hook, its onDone ends the spans after every
// other done hook, once usage and cost are known); `tracing-upstream` runs last (its onAttempt sees
// the upstream request as sent, its response hooks see the upstream's own answer first).
import { performance } from 'node:perf_hooks';
import type { Attributes, Context, Span, SpanKind as SpanKindT, SpanStatusCode as SpanStatusCodeT, TextMapPropagator, Tracer } from '@opentelemetry/api';
import type { Plugin, StreamEvent } from '../plugin.js';
import type { WireFormat } from '../config-types.js';
import { modelOf, type Attempt, type RequestContext } from '../context.js';

/** What the loader hands over from @opentelemetry/api (imported only when tracing is on). */
export interface OtelApi {
  tracer: Tracer;
  propagator: TextMapPropagator;
  root: Context;
  setSpan(ctx: Context, span: Span): Context;
  SpanKind: typeof SpanKindT;
  SpanStatusCode: typeof SpanStatusCodeT;
}

/** An attempt's span and what its answer said. */
interface AttemptSpan {
  span: Span;
  /** performance.now() when the attempt began. */
  started: number;
  responseModel?: string;
  responseId?: string;
  finishReasons?: string[];
}

interface RequestSpans {
  request: Span;
  attempts: AttemptSpan[];
}

const KEY = 'tracing';
const OPERATION: Partial<Record<RequestContext['route'], string>> = { chat: 'chat', messages: 'chat' };
const PATHS: Record<RequestContext['route'], string> = {
  chat: '/v1/chat/completions', messages: '/v1/messages', count_tokens: '/v1/messages/count_tokens', models: '/v1/models',
};

const epochMs = (perfMs: number) => performance.timeOrigin + perfMs;

const headerGetter = {
  get: (carrier: Record<string, unknown>, key: string) => carrier[key] as string | string[] | undefined,
  keys: (carrier: Record<string, unknown>) => Object.keys(carrier),
};
const headerSetter = { set: (carrier: Record<string, string>, key: string, value: string) => void (carrier[key] = value) };

export function tracingPlugins(otel: OtelApi): { first: Plugin; last: Plugin } {
  const { tracer, propagator, SpanKind, SpanStatusCode } = otel;

  const first: Plugin = {
    name: 'tracing',
    onHeaders(ctx) {
      const parent = propagator.extract(otel.root, ctx.req.headers, headerGetter);
      const request = tracer.startSpan(
        `${ctx.req.method ?? 'POST'} ${PATHS[ctx.route]}`,
        {
          kind: SpanKind.SERVER,
          startTime: epochMs(ctx.startedAt),
          attributes: { 'http.request.method': ctx.req.method ?? 'POST', 'http.route': PATHS[ctx.route], 'gateway.request_id': ctx.id },
        },
        parent,
      );
      ctx.state[KEY] = { request, attempts: [] } satisfies RequestSpans;
      ctx.traceId = request.spanContext().traceId;
    },
    onDone(ctx) {
      const spans = ctx.state[KEY] as RequestSpans | undefined;
      if (!spans) return;
      const served = endAttempts(ctx, spans.attempts);
      const { request } = spans;
      const attrs: Attributes = {
        'gen_ai.request.model': ctx.requestedModel ?? modelOf(ctx) ?? undefined,
        'gen_ai.request.max_tokens': maxTokens(ctx.body),
        'gateway.listing': ctx.offer?.listing,
        'gateway.attempts': ctx.attempts.length,
        'gateway.cost_nano': ctx.chargedNano,
        'gateway.account_id': ctx.auth?.accountId,
        'gateway.key_id': ctx.auth?.keyId,
      };
      const op = OPERATION[ctx.route];
      if (op) attrs['gen_ai.operation.name'] = op;
      if (ctx.model) attrs['gen_ai.response.model'] = ctx.model.id;
      if (ctx.usage) addUsage(attrs, ctx.usage);
      if (served?.finishReasons) attrs['gen_ai.response.finish_reasons'] = served.finishReasons;
      const status = ctx.status ?? ctx.error?.status;
      if (status !== undefined) attrs['http.response.status_code'] = status;
      if (ctx.error) attrs['error.type'] = ctx.error.code;
      else if (ctx.client.gone) attrs['error.type'] = 'client_gone';
      request.setAttributes(attrs);
      if (status !== undefined && status >= 500) request.setStatus({ code: SpanStatusCode.ERROR, message: ctx.error?.code });
      request.end(epochMs(performance.now()));
    },
  };

  const last: Plugin = {
    name: 'tracing-upstream',
    onAttempt(ctx, up) {
      const spans = ctx.state[KEY] as RequestSpans | undefined;
      if (!spans) return;
      const url = up.offer.provider.url;
      const started = performance.now();
      const span = tracer.startSpan(
        `chat ${up.offer.upstreamModel}`,
        {
          kind: SpanKind.CLIENT,
          startTime: epochMs(started),
          attributes: {
            'gen_ai.operation.name': 'chat',
            'gen_ai.provider.name': up.offer.provider.id,
            'gen_ai.system': up.offer.provider.id,
            'gen_ai.request.model': up.offer.upstreamModel,
            'gen_ai.request.max_tokens': maxTokens(up.body),
            'http.request.method': 'POST',
            'server.address': url.hostname,
            'server.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
            'url.path': joinPath(url.pathname, up.path),
            'gateway.listing': up.offer.listing,
            'gateway.upstream.format': up.format,
          },
        },
        otel.setSpan(otel.root, spans.request),
      );
      spans.attempts.push({ span, started });
      propagator.inject(otel.setSpan(otel.root, span), up.headers, headerSetter);
    },
    onResponseBody(ctx, body, up) {
      const a = currentAttempt(ctx);
      if (!a || !body || typeof body !== 'object') return undefined;
      readAnswer(a, up.format, body);
      return undefined;
    },
    onStream(ctx, up) {
      const a = currentAttempt(ctx);
      if (!a) return undefined;
      return {
        onEvent(ev: StreamEvent) {
          // A text delta has no finish reason; a chat chunk's model and id are read from the first.
          if (ev.textDelta && (up.format === 'messages' || (a.responseModel !== undefined && a.responseId !== undefined))) return ev;
          const j = ev.json;
          if (j && typeof j === 'object') readEvent(a, up.format, j);
          return ev;
        },
      };
    },
  };

  /**
   * Each attempt's span gets its outcome (ctx.attempts, in the same order) and ends when the attempt
   * did. Returns the serving attempt's.
   */
  function endAttempts(ctx: RequestContext, spans: AttemptSpan[]): AttemptSpan | undefined {
    const attempts = nonSkipped(ctx);
    let served: AttemptSpan | undefined;
    spans.forEach((s, i) => {
      const a = attempts[i];
      const attrs: Attributes = {};
      if (s.responseModel) attrs['gen_ai.response.model'] = s.responseModel;
      if (s.responseId) attrs['gen_ai.response.id'] = s.responseId;
      if (s.finishReasons) attrs['gen_ai.response.finish_reasons'] = s.finishReasons;
      if (a?.status !== undefined) attrs['http.response.status_code'] = a.status;
      if (servedBy(ctx, a)) {
        served = s;
        if (ctx.usage) addUsage(attrs, ctx.usage);
      }
      if (!a || a.outcome !== 'ok') {
        attrs['error.type'] = a?.status !== undefined ? String(a.status) : ctx.client.gone ? 'client_gone' : 'upstream_error';
        s.span.setStatus({ code: SpanStatusCode.ERROR, message: a?.reason });
      }
      s.span.setAttributes(attrs);
      s.span.end(a ? epochMs(s.started + a.durationMs) : undefined);
    });
    return served;
  }

  return { first, last };
}

const currentAttempt = (ctx: RequestContext) => (ctx.state[KEY] as RequestSpans | undefined)?.attempts.at(-1);
const nonSkipped = (ctx: RequestContext) => ctx.attempts.filter((a) => a.outcome !== 'skipped');
const servedBy = (ctx: RequestContext, a: Attempt | undefined) => a !== undefined && a.outcome === 'ok' && a.listing === ctx.offer?.listing;

function maxTokens(body: Record<string, any>): number | undefined {
  const v = body.max_completion_tokens ?? body.max_tokens;
  return typeof v === 'number' ? v : undefined;
}

/** GenAI usage: input_tokens counts every input token, the cached ones included (they have their own attributes too). */
function addUsage(attrs: Attributes, u: NonNullable<RequestContext['usage']>): void {
  attrs['gen_ai.usage.input_tokens'] = u.input + u.cacheRead + u.cacheWrite;
  attrs['gen_ai.usage.output_tokens'] = u.output;
  attrs['gen_ai.usage.cache_read.input_tokens'] = u.cacheRead;
  attrs['gen_ai.usage.cache_creation.input_tokens'] = u.cacheWrite;
}

function joinPath(base: string, path: string): string {
  return base.endsWith('/') ? base.slice(0, -1) + path : base + path;
}

const str = (v: unknown) => (typeof v === 'string' && v.length <= 200 ? v : undefined);

/** A whole answer's model, id and finish reasons, in the upstream's format. */
function readAnswer(a: AttemptSpan, format: WireFormat, body: any): void {
  a.responseModel = str(body.model) ?? a.responseModel;
  a.responseId = str(body.id) ?? a.responseId;
  if (format === 'chat') {
    const reasons = Array.isArray(body.choices) ? body.choices.map((c: any) => str(c?.finish_reason)).filter(Boolean) : [];
    if (reasons.length) a.finishReasons = reasons;
  } else if (str(body.stop_reason)) a.finishReasons = [body.stop_reason];
}

function readEvent(a: AttemptSpan, format: WireFormat, j: any): void {
  if (format === 'chat') {
    a.responseModel ??= str(j.model);
    a.responseId ??= str(j.id);
    if (Array.isArray(j.choices)) for (const c of j.choices) if (str(c?.finish_reason)) (a.finishReasons ??= []).push(c.finish_reason);
  } else if (j.type === 'message_start' && j.message) readAnswer(a, format, j.message);
  else if (j.type === 'message_delta' && str(j.delta?.stop_reason)) a.finishReasons = [j.delta.stop_reason];
}
