// One request to the simulated upstream: route, record, authenticate, apply directives, answer.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { constants as h2, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2';
import type { WireFormat } from '../config-types.js';
import { GatewayError, badRequest, notFound } from '../errors.js';
import { planAnswer } from './answer.js';
import { chatBody, chatEvents } from './chat-wire.js';
import { deliverBody, deliverStream, faultError, pause, sendError, sendJson, type Exchange } from './delivery.js';
import { vendorHeaders } from './vendor-headers.js';
import { messagesBody, messagesEvents } from './messages-wire.js';
import { lastReadingMemo } from './reading.js';
import { isObject } from './request-text.js';
import { validateChatRequest, validateMessagesRequest } from './validate.js';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body; the raw text when it is not JSON; undefined when empty. */
  body: any;
  at: number;
  /** Resolves when the exchange is over. */
  ended: Promise<Outcome>;
}

/** Whether the response ended properly, and how many events were written. */
export interface Outcome {
  completed: boolean;
  written: number;
}

export interface HandlerOptions {
  apiKey?: string;
  /** Absent: nothing is recorded (`gateway simulate`, whose recordings nobody can read). */
  record?(r: ReceivedRequest): void;
}

type Route = 'messages' | 'count_tokens' | 'chat' | 'models';

const ROUTES: Record<string, Route> = {
  'POST /v1/messages': 'messages',
  'POST /v1/messages/count_tokens': 'count_tokens',
  'POST /v1/chat/completions': 'chat',
  'GET /v1/models': 'models',
};

const MODELS = [
  { id: 'sim-fast', display_name: 'Simulated Fast' },
  { id: 'sim-smart', display_name: 'Simulated Smart' },
];
const MODELS_CREATED = Date.UTC(2025, 0, 1) / 1000;

export function createHandler(opts: HandlerOptions): (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => void {
  let seq = 0;
  const read = lastReadingMemo();
  return (req, res) => {
    const n = ++seq;
    let gone: AbortController | undefined;
    let result: Outcome | undefined;
    let settle: ((r: Outcome) => void) | undefined;
    const x: Exchange = {
      res,
      left: false,
      gone: () => {
        if (gone === undefined) {
          gone = new AbortController();
          if (x.left) gone.abort();
        }
        return gone.signal;
      },
      http2: 'stream' in res,
      flushHeaders: () => ('stream' in res ? undefined : res.flushHeaders()),
      reset: () => ('stream' in res ? res.stream.close(h2.NGHTTP2_INTERNAL_ERROR) : res.socket?.destroy()),
      headers: {},
      written: 0,
    };
    res.once('close', () => {
      // Only a client that left before the end aborts: abort() builds a DOMException with its stack,
      // which at every close cost the simulator a tenth of its time under the benchmark's load.
      x.left = !res.writableFinished;
      if (x.left) gone?.abort();
      result = { completed: res.writableFinished, written: x.written };
      settle?.(result);
    });
    // Made only for a request that is recorded: a promise and its closure per request cost too.
    const ended = () => (result !== undefined ? Promise.resolve(result) : new Promise<Outcome>((resolve) => (settle = resolve)));
    const route = ROUTES[`${req.method} ${(req.url ?? '/').split('?')[0].replace(/\/+$/, '')}`];
    // The models list and unknown routes answer in the shape the anthropic-version header asks for.
    const format: WireFormat =
      route === 'chat' || (route !== 'messages' && route !== 'count_tokens' && req.headers['anthropic-version'] === undefined)
        ? 'chat'
        : 'messages';
    x.headers = vendorHeaders(format, `req_sim${n}`);
    handle(opts, read, req, x, route, format, n, ended).catch((err) => {
      if (x.left) return; // the client left mid-read or mid-write: nobody to tell
      if (!res.headersSent) sendError(x, new GatewayError(500, 'api_error', 'internal_error', `Simulator error: ${String(err)}`), format);
      else x.reset();
    });
  };
}

async function handle(
  opts: HandlerOptions,
  read: ReturnType<typeof lastReadingMemo>,
  req: IncomingMessage | Http2ServerRequest,
  x: Exchange,
  route: Route | undefined,
  format: WireFormat,
  seq: number,
  ended: () => ReceivedRequest['ended'],
): Promise<void> {
  const headers = req.headers;

  const raw = await readBody(req);
  let body: unknown;
  let parsed = true;
  try {
    if (raw !== '') body = JSON.parse(raw);
  } catch {
    body = raw;
    parsed = false;
  }
  opts.record?.({ method: req.method ?? '', path: req.url ?? '', headers: { ...headers }, body, at: Date.now(), ended: ended() });

  try {
    if (route === undefined) throw notFound('not_found', `No route for ${req.method} ${req.url}.`);
    if (opts.apiKey !== undefined && !authorized(opts.apiKey, headers, format)) {
      throw new GatewayError(401, 'authentication_error', 'invalid_api_key', format === 'messages' ? 'invalid x-api-key' : 'Incorrect API key provided.');
    }
    if (route === 'models') return sendJson(x, 200, modelsList(format));
    if (format === 'messages' && headers['anthropic-version'] === undefined) throw badRequest('invalid_request_error', 'anthropic-version: header is required');
    if (!parsed || !isObject(body)) throw badRequest('invalid_json', 'The request body is not a valid JSON object.');

    const { text, settings } = read(raw, body, format);
    if (settings.fault === 'reset_before_headers') return x.reset();
    if (settings.fault === 'stall_before_headers') {
      await pause(settings.ms, x);
      if (x.left) return;
    }
    if (settings.fault === 'status') return sendError(x, faultError(settings.status), format, settings.retryAfter);

    if (format === 'chat') validateChatRequest(body);
    else validateMessagesRequest(body, route === 'count_tokens');
    if (route === 'count_tokens') return sendJson(x, 200, { input_tokens: Math.ceil(text.chars / 4) });

    const answer = planAnswer(body, format, text, settings, seq);
    if (body.stream === true) {
      const events = format === 'messages' ? messagesEvents(answer) : chatEvents(answer, body.stream_options?.include_usage === true);
      await deliverStream(x, events, settings, format);
    } else {
      await deliverBody(x, format === 'messages' ? messagesBody(answer) : chatBody(answer), settings, format);
    }
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    sendError(x, err, format);
  }
}

/** Chat routes take `Authorization: Bearer`; messages routes `x-api-key` (or a bearer token, as current SDKs send). */
function authorized(apiKey: string, headers: IncomingHttpHeaders, format: WireFormat): boolean {
  const bearer = headers.authorization === `Bearer ${apiKey}`;
  return format === 'chat' ? bearer : bearer || headers['x-api-key'] === apiKey;
}

function modelsList(format: WireFormat): object {
  if (format === 'chat') {
    return { object: 'list', data: MODELS.map((m) => ({ id: m.id, object: 'model', created: MODELS_CREATED, owned_by: 'simulator' })) };
  }
  const createdAt = new Date(MODELS_CREATED * 1000).toISOString().replace('.000Z', 'Z');
  return {
    data: MODELS.map((m) => ({ type: 'model', id: m.id, display_name: m.display_name, created_at: createdAt })),
    has_more: false,
    first_id: MODELS[0].id,
    last_id: MODELS[MODELS.length - 1].id,
  };
}

/**
 * The body as text. Listeners, not `for await`: the async iterator's machinery cost more than
 * reading a typical one-chunk body. A request whose client leaves mid-body rejects (it closes unended).
 */
function readBody(req: IncomingMessage | Http2ServerRequest): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let whole = false;
    req.on('data', (chunk: Buffer | string) => chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk));
    req.once('end', () => {
      whole = true;
      resolve(chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    });
    req.once('error', reject);
    // Every request closes after its end: an Error (and its stack) only for one that did not end.
    req.once('close', () => whole || reject(new Error('the request closed before its end')));
  });
}
