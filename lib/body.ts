// Reading request bodies within two bounds: one body (server.body_limit_bytes → 413) and all bodies
// in flight together (server.max_buffered_bytes → 503). The shared bound is what keeps a crowd of
// large uploads from taking the process's memory: a request over it is refused before its bytes
// are kept, and the requests already admitted keep what they reserved.
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { EMPTY_BODY } from './context.js';
import { GatewayError, unavailable } from './errors.js';

/** Bytes reserved by the bodies being read or held by requests in flight. */
export class BodyBudget {
  private used = 0;

  constructor(private readonly limit: () => number) {}

  /** Reserve `n` bytes; false (nothing reserved) when that would pass the bound. */
  take(n: number): boolean {
    if (this.used + n > this.limit()) return false;
    this.used += n;
    return true;
  }

  give(n: number): void {
    this.used -= n;
  }
}

const tooLarge = (limit: number) =>
  new GatewayError(413, 'request_too_large', 'request_too_large', `The request body is larger than the limit of ${limit} bytes.`);

/**
 * Everything in a paused stream's buffer, in one read (no 'data' and 'end' events a tick apart):
 * for a body known to be all there. Empty when nothing is.
 */
export const takeBuffered = (stream: Readable): Buffer => (stream.read() as Buffer | null) ?? EMPTY_BODY;

const busy = () =>
  unavailable('server_busy', 'The gateway is receiving too many request bodies at once. Retry shortly.', 1);

/**
 * Read one body into memory, reserving its bytes from `budget` (the declared length up front, else
 * chunk by chunk). The reservation lasts until `release()`, also after a refusal (what was reserved
 * is returned by release alone, so a caller calls it exactly once).
 */
export class BodyReader {
  private reserved = 0;

  constructor(
    private readonly req: IncomingMessage,
    private readonly limit: number,
    private readonly budget: BodyBudget,
  ) {}

  async read(): Promise<Buffer> {
    const { req, limit } = this;
    const declared = Number(req.headers['content-length']);
    if (declared > limit) throw tooLarge(limit);
    if (declared > 0 && !this.reserve(declared)) throw busy();
    // When the header hooks answered without waiting, this still runs inside the 'request' event,
    // before the parser has given the request the rest of the packet that carried its head: one
    // microtask on, it has (a small body's every byte with it).
    if (req.readableLength < declared) await undefined;
    // The whole declared body is in the request's buffer (bounded and reserved above): taken at once.
    // Flowing mode would hand it over in a 'data' and then an 'end' event, each a tick later.
    if (req.readableLength === declared && req.readableFlowing === null) return takeBuffered(req);
    return this.stream();
  }

  /** Chunk by chunk as they arrive, each counted against the bounds before it is kept. */
  private stream(): Promise<Buffer> {
    const { req, limit } = this;
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const refuse = (err: GatewayError) => {
        req.removeAllListeners('data');
        req.pause();
        reject(err);
      };
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size > limit) return refuse(tooLarge(limit));
        if (size > this.reserved && !this.reserve(size - this.reserved)) return refuse(busy());
        chunks.push(c);
      });
      req.once('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
      req.once('error', () => reject(new GatewayError(400, 'invalid_request_error', 'bad_body', 'The request body could not be read.')));
    });
  }

  private reserve(n: number): boolean {
    if (!this.budget.take(n)) return false;
    this.reserved += n;
    return true;
  }

  release(): void {
    this.budget.give(this.reserved);
    this.reserved = 0;
  }
}

const UNBOUNDED = new BodyBudget(() => Infinity);

/** A small body outside the API routes (dashboard forms, webhooks), bounded by `limit` alone. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new BodyReader(req, limit, UNBOUNDED).read();
}
