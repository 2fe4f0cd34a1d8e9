// How one upstream attempt ends when it does not answer: the failures the attempt loop fails over
// from, the ones that end the request, and the upstream's own words made fit to pass on.
import { GatewayError } from './errors.js';
import type { Scrubber } from './scrub.js';

/** Why an attempt failed, for history and for the 503 message. */
export class AttemptFailed extends Error {
  constructor(
    readonly reason: string,
    readonly status?: number,
    /** The upstream's own Retry-After (ms), if it sent one. */
    readonly retryAfterMs?: number,
  ) {
    super(reason);
  }
}

export class ClientGone extends Error {
  constructor() {
    super('client closed the connection');
  }
}

/** The request ran past upstream.max_request_ms: not the offer's fault, and no time is left for another. */
export class DeadlineExceeded extends Error {
  constructor(readonly ms: number) {
    super(`the request took longer than ${ms} ms (upstream.max_request_ms)`);
  }
}

export const timedOut = (e: DeadlineExceeded) =>
  new GatewayError(504, 'timeout_error', 'request_timeout', `The request was ended: it took longer than the gateway's limit of ${e.ms} ms.`);

/** 'done': the answer was sent; an AttemptFailed: the failure to fail over from. */
export type AttemptResult = 'done' | AttemptFailed;

/** Upstream texts passed on (error messages, reasons) are cut to this many characters. */
const MAX_UPSTREAM_TEXT = 1000;

/** Every upstream text that reaches a client, a log line or a history row goes through it. */
export class UpstreamText {
  constructor(readonly scrubber: Scrubber) {}

  /** An upstream's text, scrubbed of secrets and cut to a length fit for a message. */
  untrusted(text: string): string {
    return this.scrubber.scrub(text.length > MAX_UPSTREAM_TEXT ? text.slice(0, MAX_UPSTREAM_TEXT) + '…' : text);
  }

  /** A network error's description (its message may quote the upstream). */
  networkError(e: unknown): string {
    const err = e as NodeJS.ErrnoException;
    const text = err?.code ? `${err.code}${err.message && !err.message.includes(err.code) ? ` (${err.message})` : ''}` : (err?.message ?? String(e));
    return this.untrusted(text);
  }
}
