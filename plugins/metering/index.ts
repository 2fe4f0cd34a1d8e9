// metering: reads usage from the upstream's own output (it sits next to the upstream, so it sees the
// upstream's format), settles the credit hold at actual usage, and writes the request's history row.
// A stream that breaks or is abandoned is charged for what was produced: the usage the upstream
// reported so far, else an estimate from the output text already streamed.
import type { Plugin, PluginEnv, StreamEvent, UpstreamRequest } from '../../lib/plugin.js';
import { modelOf, type Offer, type Outcome, type RequestContext, type Usage } from '../../lib/context.js';
import type { WireFormat } from '../../lib/config-types.js';
import type { HistoryRow, Store } from '../../lib/store/types.js';
import { andThen } from '../../lib/maybe-promise.js';
import { endHold, holdOf, type HoldEnd, type RequestHold } from '../budget-hold/hold.js';
import { OutputText } from './output-text.js';
import { costOf, fromUsage, fromChatUsage, fromMessagesUsage, type Reported } from './usage.js';

/** What one attempt produced, as far as the upstream told us. */
interface Reading {
  offer: Offer;
  reported: Reported;
  /** The upstream's final usage arrived (non-stream body, chat usage chunk, messages message_delta). */
  final: boolean;
  text: OutputText;
}

const KEY = 'metering';
const NO_USAGE: Usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 };

function startReading(ctx: RequestContext, up: UpstreamRequest): Reading {
  // A new attempt replaces the previous one's reading: only the serving attempt is charged.
  const r: Reading = { offer: up.offer, reported: {}, final: false, text: new OutputText() };
  ctx.state[KEY] = r;
  return r;
}

/** Output text of a whole (non-streamed) answer, for when it carries no usage. */
function addBodyText(format: WireFormat, body: any, text: OutputText): void {
  if (format === 'chat') {
    for (const c of Array.isArray(body.choices) ? body.choices : []) {
      const m = c?.message;
      text.add(m?.content);
      text.add(m?.reasoning_content);
      for (const t of Array.isArray(m?.tool_calls) ? m.tool_calls : []) {
        text.addToolCall(t?.function?.name);
        text.add(t?.function?.arguments);
      }
    }
  } else {
    for (const b of Array.isArray(body.content) ? body.content : []) {
      text.add(b?.text);
      text.add(b?.thinking);
      if (b?.type === 'tool_use') {
        text.addToolCall(b.name);
        text.add(JSON.stringify(b.input ?? {}));
      }
    }
  }
}

function onChatChunk(r: Reading, j: any): void {
  if (j.usage && typeof j.usage === 'object') {
    r.reported = fromChatUsage(j.usage);
    r.final = true;
  }
  if (!Array.isArray(j.choices)) return;
  for (const c of j.choices) {
    const d = c?.delta;
    if (!d) continue;
    r.text.add(d.content);
    r.text.add(d.reasoning_content);
    r.text.add(d.reasoning);
    if (Array.isArray(d.tool_calls)) {
      for (const t of d.tool_calls) {
        // A call's first fragment carries its name.
        if (typeof t?.function?.name === 'string') r.text.addToolCall(t.function.name);
        r.text.add(t?.function?.arguments);
      }
    }
  }
}

function onMessagesEvent(r: Reading, j: any): void {
  switch (j.type) {
    case 'message_start':
      r.reported = { ...r.reported, ...fromMessagesUsage(j.message?.usage) };
      break;
    case 'content_block_start':
      if (j.content_block?.type === 'tool_use') r.text.addToolCall(j.content_block.name);
      break;
    case 'content_block_delta': {
      const d = j.delta;
      r.text.add(d?.text);
      r.text.add(d?.partial_json);
      r.text.add(d?.thinking);
      break;
    }
    case 'message_delta':
      // Cumulative: its fields replace earlier ones.
      r.reported = { ...r.reported, ...fromMessagesUsage(j.usage) };
      r.final = true;
      break;
  }
}

/**
 * Token counts to charge for the serving attempt. Reported numbers are used as they are, except
 * where they cannot be right: no report (a broken stream, an upstream without usage), or a zero
 * where work evidently happened (a prompt of zero tokens, no output tokens beside streamed text).
 * Those fall back to our input estimate and the tokens of the output text produced.
 */
function measure(r: Reading, ctx: RequestContext): Usage {
  const { cacheRead = 0, cacheWrite1h = 0 } = r.reported;
  // 1-hour writes are part of all writes: a total below them (an upstream's inconsistency) grows to cover them.
  const cacheWrite = Math.max(r.reported.cacheWrite ?? 0, cacheWrite1h);
  let { input, output } = r.reported;
  if (input === undefined || (input === 0 && cacheRead === 0 && cacheWrite === 0)) {
    input = Math.max(0, Math.ceil(ctx.estimatedInputTokens) - cacheRead - cacheWrite);
  }
  // Final usage is exact; partial usage (message_start's output) is a floor under the streamed text.
  if (!r.final || !output) output = Math.max(output ?? 0, r.text.tokens());
  return { input, output, cacheRead, cacheWrite, cacheWrite1h };
}

const NOTHING_HELD: HoldEnd = { charged: 0 };

/** The usage's exact cost, clamped to the hold (a hold is a true upper bound). */
function chargeFor(usage: Usage, offer: Offer, hold: RequestHold): number {
  const want = costOf(usage, offer.prices);
  return want > BigInt(hold.amount) ? hold.amount : Number(want);
}

/**
 * Refused before any upstream call (400, 402, 403, 404, 413, 415, 429…): it costs the client nothing,
 * so the store bounds how many of a key's refusals get a row of their own (History.recordRefusal).
 */
const refused = (ctx: RequestContext) => ctx.attempts.length === 0 && (ctx.status ?? 0) >= 400;

function recordHistory(store: Store, ctx: RequestContext, outcome: Outcome, usage: Usage, hold: RequestHold | undefined, cost: number): void {
  const auth = ctx.auth!;
  const row: HistoryRow = {
    requestId: ctx.id,
    time: ctx.receivedAt,
    accountId: auth.accountId,
    keyId: auth.keyId,
    route: ctx.route,
    model: modelOf(ctx),
    requestedModel: ctx.requestedModel ?? null,
    listing: ctx.offer?.listing ?? null,
    attempts: ctx.attempts,
    status: outcome,
    httpStatus: ctx.status ?? null,
    stream: ctx.stream === true,
    usage,
    holdNano: hold?.amount ?? 0,
    costNano: cost,
    latencyMs: performance.now() - ctx.startedAt,
    ttfbMs: ctx.firstByteAt === undefined ? null : ctx.firstByteAt - ctx.startedAt,
    error: ctx.error?.message ?? null,
  };
  if (refused(ctx)) store.history.recordRefusal(row);
  else store.history.record(row);
}

export default function metering(env: PluginEnv): Plugin {
  const store = env.store as Store;

  return {
    name: 'metering',

    onResponseBody(ctx: RequestContext, body: any, up: UpstreamRequest) {
      const r = startReading(ctx, up);
      r.reported = fromUsage(up.format, body.usage);
      r.final = true;
      if (!r.reported.output) addBodyText(up.format, body, r.text);
      return undefined;
    },

    onStream(ctx: RequestContext, up: UpstreamRequest) {
      const r = startReading(ctx, up);
      const read = up.format === 'chat' ? onChatChunk : onMessagesEvent;
      return {
        onEvent(ev: StreamEvent) {
          // A plain text delta carries nothing else to read (no usage, no tool call).
          if (ev.textDelta) r.text.add(ev.textDelta.text);
          else {
            const j = ev.json;
            if (j && typeof j === 'object') read(r, j);
          }
          return ev;
        },
      };
    },

    onDone(ctx: RequestContext, outcome: Outcome) {
      if (!ctx.auth) return;
      const reading = ctx.state[KEY] as Reading | undefined;
      // Only the attempt that served the client is charged; failed attempts before it are not.
      const served = reading && ctx.offer && reading.offer.listing === ctx.offer.listing ? reading : undefined;
      const usage = served ? measure(served, ctx) : NO_USAGE;
      ctx.usage = usage;

      const hold = holdOf(ctx);
      const end = hold && !hold.ended ? endHold(store.ledger, hold, served ? chargeFor(usage, served.offer, hold) : null) : NOTHING_HELD;
      return andThen(end, ({ charged, settleError }) => {
        ctx.chargedNano = charged;
        // A successful token count leaves no history row (spec 2.1).
        if (ctx.route !== 'count_tokens' || outcome !== 'ok' || ctx.error) recordHistory(store, ctx, outcome, usage, hold, charged);
        // Logged by the chain; the history row is written first.
        if (settleError) throw settleError;
      });
    },
  };
}
