// The stream relay: one upstream SSE answer to the client, event by event. It holds the stream back
// until it commits (first output event or the commit timeout), so a failure before then can still
// move on to the next offer; after it, a failure ends the stream with one error event in the
// client's format. Stream hooks (usage, conversion) see every event on its way.
import { performance } from 'node:perf_hooks';
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { GatewayConfig, WireFormat } from './config-types.js';
import type { RequestContext } from './context.js';
import { GatewayError, errorEvent } from './errors.js';
import type { Plugin, StreamHook, UpstreamRequest } from './plugin.js';
import { StreamEvent } from './plugin.js';
import type { UpstreamCall } from './proxy.js';
import type { Breakers } from './breaker.js';
import { SseEventTooLarge, SseParser, formatEvent } from './sse.js';
import { classifyEvent, endsStream, vendorErrorOf } from './wire.js';
import { AttemptFailed, ClientGone, DeadlineExceeded, timedOut, type AttemptResult, type UpstreamText } from './attempt-errors.js';

/** A vendor's error event larger than this is not passed through as it came, but told in our words. */
const MAX_PASSED_ERROR_EVENT = 16 * 1024;

export class StreamRelay {
  constructor(
    /** Plugins in reverse chain order (stream hooks run from the upstream toward the client). */
    private readonly reversed: Plugin[],
    private readonly config: GatewayConfig,
    private readonly breakers: Breakers,
    private readonly text: UpstreamText,
  ) {}

  /**
   * A vendor's error event after the stream committed, as the client gets it: the event as it came
   * (scrubbed) when the formats match, else the nearest error type of the client's format with the
   * vendor's message. The GatewayError is the request's error (history).
   */
  private vendorStreamError(upstream: WireFormat, client: WireFormat, ev: StreamEvent): [GatewayError, string] {
    const vendor = vendorErrorOf(upstream, ev.json);
    const err = new GatewayError(502, vendor.type, vendor.code ?? 'upstream_error', this.text.untrusted(vendor.message));
    if (upstream === client && ev.data.length <= MAX_PASSED_ERROR_EVENT) {
      const data = this.text.scrubber.scrub(ev.data);
      // Scrubbing could in principle cut through JSON syntax: then it is told in our words instead.
      if (isJson(data)) return [err, formatEvent({ event: ev.event, data })];
    }
    return [err, errorEvent(err, client)];
  }

  /**
   * Relay an SSE stream event by event. Nothing reaches the client until the stream commits (first
   * output event or the commit timeout); until then any failure moves on to the next offer.
   */
  relay(ctx: RequestContext, res: ServerResponse, call: UpstreamCall, up: UpstreamRequest, body: Readable): Promise<AttemptResult> {
    const { idle_timeout_ms, commit_timeout_ms } = this.config.upstream;
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
        res.writeHead(200, [...ctx.head, 'content-type', 'text/event-stream; charset=utf-8', 'cache-control', 'no-cache', 'x-service-listing', up.offer.listing]);
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
        this.breakers.failure(up.offer.listing);
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
            const ev = new StreamEvent(raw, up.format);
            const kind = classifyEvent(up.format, ev);
            if (kind === 'error') {
              write(out);
              return fail(`upstream error event: ${this.text.untrusted(vendorErrorOf(up.format, ev.json).message)}`, ev);
            }
            if (kind === 'malformed') {
              write(out);
              return fail('upstream sent a malformed event');
            }
            sawEvent = true;
            if (!sawEnd && endsStream(up.format, ev)) sawEnd = true;
            if (kind === 'output' && !committed) {
              // The first output: the head, what came before it and this event leave now, not after
              // the rest of the chunk. A response's write corks its socket until the next tick: this
              // uncorks it sooner. Not res.uncork(), which on Node 24 also counts down the response's
              // own corks (res.cork() was never called), and then holds back every later write.
              pending += out;
              out = '';
              commit();
              write(run([ev], 0));
              res.socket?.uncork();
              continue;
            }
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
        this.breakers.success(up.offer.listing);
        res.end();
        finish('done', true);
      });
      body.once('error', (e) => {
        if (e instanceof DeadlineExceeded) expire(e);
        else fail(e instanceof AttemptFailed ? e.reason : this.text.networkError(e));
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
