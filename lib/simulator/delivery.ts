// Sends an answer the way a real upstream would, or breaks it the way the request's directives ask.
// Every wait ends when the client goes away, and every write waits for its flush (backpressure),
// so a reset after K events really comes after those K events reached the socket.
import { setTimeout as delay } from 'node:timers/promises';
import type { WireFormat } from '../config-types.js';
import { GatewayError, errorBody, errorEvent, type ErrorType } from '../errors.js';
import type { Fault, SimSettings } from './directives.js';

/** What both node:http's and node:http2's compatibility responses offer. */
export interface Reply {
  readonly headersSent: boolean;
  writeHead(status: number, headers: Record<string, string | number>): unknown;
  write(chunk: string, callback?: (err?: Error | null) => void): boolean;
  readonly socket?: { uncork(): void } | null;
  once(event: 'drain' | 'close', listener: () => void): unknown;
  off(event: 'drain' | 'close', listener: () => void): unknown;
  end(): unknown;
  end(chunk: string): unknown;
}

/** One request's response side. */
export interface Exchange {
  res: Reply;
  /** Whether the client went away before the response ended. */
  left: boolean;
  /**
   * Aborted when the client goes away. Made on first call: only waits need one, and an
   * AbortController for every request was a few percent of the simulator's time under load.
   */
  gone(): AbortSignal;
  /** Sends the headers now (a 200 whose body comes later). */
  flushHeaders(): void;
  /** Breaks the connection (HTTP/1.1) or resets the stream (HTTP/2) without a proper end. */
  reset(): void;
  /** An HTTP/2 stream (else an HTTP/1.1 response). */
  http2: boolean;
  /** The vendor's head for this request (vendor-headers.ts): its request id and the rest a vendor sends. */
  headers: Record<string, string>;
  /** Stream events (or body pieces) written so far. */
  written: number;
}

const MID_STREAM: ReadonlySet<Fault | undefined> = new Set<Fault | undefined>(['reset_mid_stream', 'stall_mid_stream', 'malformed_event', 'error_after_200']);

export const pause = (ms: number, x: Exchange): Promise<unknown> =>
  delay(ms, undefined, { signal: x.gone() }).catch(() => undefined);

export function sendJson(x: Exchange, status: number, body: object, extra: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  x.res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...x.headers, ...extra });
  x.res.end(text);
}

export function sendError(x: Exchange, err: GatewayError, format: WireFormat, retryAfter?: number): void {
  sendJson(x, err.status, errorBody(err, format), retryAfter === undefined ? {} : { 'retry-after': String(retryAfter) });
}

/** The vendor's error for a simulated failure status. */
export function faultError(status: number): GatewayError {
  const type: ErrorType =
    ({ 400: 'invalid_request_error', 401: 'authentication_error', 402: 'billing_error', 403: 'permission_error', 404: 'not_found_error', 413: 'request_too_large', 429: 'rate_limit_error', 503: 'overloaded_error', 504: 'timeout_error', 529: 'overloaded_error' } as Record<number, ErrorType>)[status] ??
    (status >= 500 ? 'api_error' : 'invalid_request_error');
  return new GatewayError(status, type, type, `Simulated upstream failure (${status}).`);
}

/** Overloaded, as vendors report it inside a stream that already started. */
const overloaded = () => new GatewayError(529, 'overloaded_error', 'overloaded', 'Overloaded');

/** A stream of preformatted SSE events; mid-stream faults fire after `after` events. */
export async function deliverStream(x: Exchange, events: Iterable<string>, s: SimSettings, format: WireFormat): Promise<void> {
  x.res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', ...x.headers });
  x.flushHeaders();
  let fault = MID_STREAM.has(s.fault) ? s.fault : undefined;
  // A plain HTTP/1.1 stream goes out back to back, waiting only while the socket is full: waiting
  // for every write's flush (a promise and an abort listener per event) was half of its cost. Each
  // event still leaves in a write of its own (writeNow uncorks), as when every write waited.
  // Faults and delays keep the per-write flush: a reset after K events comes after K really left.
  // HTTP/2 keeps it too: there a flush wait is what puts each event in its own socket write.
  const paced = fault !== undefined || s.delayMs > 0 || x.http2;
  let sent = 0;
  for (const event of events) {
    if (fault !== undefined && sent === s.after) {
      if (await breakStream(x, fault, s, format)) return;
      fault = undefined;
    }
    if (sent > 0 && s.delayMs > 0) await pause(s.delayMs, x);
    if (x.left) return;
    if (paced) await write(x, event);
    else if (!writeNow(x, event)) await drained(x);
    sent++;
  }
  if (fault !== undefined && (await breakStream(x, fault, s, format))) return;
  if (!x.left) x.res.end();
}

/** Returns true when the response is over. */
async function breakStream(x: Exchange, fault: Fault, s: SimSettings, format: WireFormat): Promise<boolean> {
  switch (fault) {
    case 'reset_mid_stream':
      x.reset();
      return true;
    case 'stall_mid_stream':
      await pause(s.ms, x);
      return x.left;
    case 'malformed_event':
      await write(x, format === 'messages' ? MALFORMED_MESSAGES_EVENT : MALFORMED_CHAT_EVENT);
      x.res.end();
      return true;
    default:
      await write(x, errorEvent(overloaded(), format));
      x.res.end();
      return true;
  }
}

/** A whole JSON body; mid-stream faults break it the nearest way a body can break. */
export async function deliverBody(x: Exchange, body: object, s: SimSettings, format: WireFormat): Promise<void> {
  let text = JSON.stringify(s.fault === 'error_after_200' ? errorBody(overloaded(), format) : body);
  if (s.fault === 'malformed_event') text = text.slice(0, text.length >> 1);
  x.res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...x.headers });
  if (s.fault === 'reset_mid_stream') {
    await write(x, text.slice(0, text.length >> 1));
    return x.reset();
  }
  if (s.fault === 'stall_mid_stream') {
    x.flushHeaders();
    await pause(s.ms, x);
    if (x.left) return;
  }
  x.res.end(text);
}

/** Writes at once, without waiting; false when the response's buffer is full (wait for drained). */
function writeNow(x: Exchange, chunk: string): boolean {
  x.written++;
  const more = x.res.write(chunk);
  // node:http corks the socket at a write until the next tick: uncork the socket itself so this
  // event leaves now. Not the response's uncork(): unpaired, it leaves the response's own cork
  // count below zero, and Node 24 then holds every later chunk for an uncork that never comes.
  x.res.socket?.uncork();
  return more;
}

/** Resolves once the response takes writes again, or the client left. */
function drained(x: Exchange): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      x.res.off('drain', done);
      x.res.off('close', done);
      resolve();
    };
    x.res.once('drain', done);
    x.res.once('close', done);
  });
}

/** Writes and waits for the chunk's flush (or the client's leaving). */
function write(x: Exchange, chunk: string): Promise<void> {
  return new Promise((resolve) => {
    if (x.left) return resolve();
    const gone = x.gone();
    const done = () => {
      gone.removeEventListener('abort', done);
      resolve();
    };
    gone.addEventListener('abort', done);
    x.written++;
    x.res.write(chunk, done);
  });
}

const MALFORMED_MESSAGES_EVENT = 'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0,\n\n';
const MALFORMED_CHAT_EVENT = 'data: {"id": "chatcmpl-broken", "choices": [\n\n';
