// One line per API request on stdout, written when the request has fully ended (its hold settled,
// its history row queued): what the history row holds, for every request, the refused and the
// unauthenticated ones included. Ids, counts, times and codes only: never a key, a prompt or an
// answer, nor an upstream's message (it can quote the request).
import { performance } from 'node:perf_hooks';
import { modelOf, type RequestContext } from './context.js';
import type { LogSink } from './log.js';

const round = (ms: number) => Math.round(ms * 100) / 100;

/** The line's fields (README, Logs and traces). */
export function requestLine(ctx: RequestContext): Record<string, unknown> {
  const u = ctx.usage;
  const status = ctx.status ?? ctx.error?.status ?? null;
  const attempts = new Array(ctx.attempts.length);
  for (let i = 0; i < attempts.length; i++) {
    const a = ctx.attempts[i];
    attempts[i] = { listing: a.listing, outcome: a.outcome, status: a.status ?? null, ms: round(a.durationMs) };
  }
  return {
    time: new Date().toISOString(),
    level: status !== null && status >= 500 ? 'error' : 'info',
    msg: 'request',
    request_id: ctx.id,
    account_id: ctx.auth?.accountId ?? null,
    key_id: ctx.auth?.keyId ?? null,
    route: ctx.route,
    model: modelOf(ctx),
    requested_model: ctx.requestedModel ?? null,
    stream: ctx.stream,
    listing: ctx.offer?.listing ?? null,
    attempts,
    status,
    outcome: ctx.client.gone ? 'client_gone' : ctx.error ? 'error' : 'ok',
    input_tokens: u?.input ?? 0,
    output_tokens: u?.output ?? 0,
    cache_read_tokens: u?.cacheRead ?? 0,
    cache_write_tokens: u?.cacheWrite ?? 0,
    cache_write_1h_tokens: u?.cacheWrite1h ?? 0,
    cost_nano: ctx.chargedNano ?? 0,
    latency_ms: round(performance.now() - ctx.startedAt),
    ttfb_ms: ctx.firstByteAt === undefined ? null : round(ctx.firstByteAt - ctx.startedAt),
    error: ctx.error?.code ?? null,
    trace_id: ctx.traceId ?? null,
  };
}

/** Writes the line when the sink's level lets it through; off: never called (gateway.ts). */
export function logRequest(sink: LogSink, ctx: RequestContext): void {
  const line = requestLine(ctx);
  if (sink.enabled(line.level as 'info' | 'error')) sink.write(line);
}
