// The text of an upstream request body. Hooks shape a same-format attempt by replacing a few
// top-level values (model, output budget, stream options, fields the offer may not be sent) and
// keep the rest, the conversation above all, as the client's own values. Those are sent as the
// client's own text, found by one scan for the top-level members, instead of serialized again.
// Counted by callgrind on the bench's 2 KB chat body (bench/instructions.ts): JSON.stringify's
// string serializer ran 48,000 instructions a request before, 2,000 now (the replaced values), and
// the scan takes 3,400.
import { jsonString } from './json-string.js';
import { topLevelMembers, type Member } from './json-scan.js';
import type { RequestContext } from './context.js';

type ClientText = Pick<RequestContext, 'bodyText' | 'bodyMembers'>;

/**
 * The top-level members of the client's body text, with the items of its tools: one scan a request
 * for the estimator (the tools' own texts) and the upstream payload. Undefined without a text.
 */
export function clientMembers(ctx: ClientText): Map<string, Member> | undefined {
  if (ctx.bodyText === undefined) return undefined;
  if (ctx.bodyMembers === undefined) ctx.bodyMembers = topLevelMembers(ctx.bodyText, 'tools') ?? null;
  return ctx.bodyMembers ?? undefined;
}

/** The client's own text of each of its tools, or undefined. */
export function clientToolTexts(ctx: ClientText): string[] | undefined {
  const items = clientMembers(ctx)?.get('tools')?.items;
  return items?.map(([start, end]) => ctx.bodyText!.slice(start, end));
}

/**
 * `body` as JSON text. `client` must be `JSON.parse(text)`, unchanged since (ctx.body is read-only
 * to hooks): each top-level value of `body` that is still the client's own (===) is copied from
 * `text`, the others are serialized. The same JSON as `JSON.stringify(body)` but for the copied
 * values' own spelling (numbers, escapes and spaces as the client wrote them). Bytes when large (see payloadOf).
 */
export function upstreamPayload(
  body: Record<string, any>,
  client: Record<string, any>,
  text: string,
  members: Map<string, Member> | undefined = topLevelMembers(text),
): string | Buffer {
  if (!members) return payloadOf([JSON.stringify(body)]);
  const pieces = ['{'];
  for (const key in body) {
    if (!Object.hasOwn(body, key)) continue;
    const value = body[key];
    const own = value === client[key] ? members.get(key) : undefined;
    let member: string;
    if (own !== undefined) member = text.slice(own.start, own.end);
    else {
      const v = JSON.stringify(value);
      if (v === undefined) continue; // undefined, a function: JSON.stringify leaves the member out
      member = `${jsonString(key)}:${v}`;
    }
    if (pieces.length > 1) pieces.push(',');
    pieces.push(member);
  }
  pieces.push('}');
  return payloadOf(pieces);
}

/** Above this many characters a payload is sent as bytes. */
export const LARGE_PAYLOAD_CHARS = 64 * 1024;

/**
 * The pieces of a payload joined: a string, or bytes when large. A V8 string over 128 KB is a
 * large object (pages of its own, faulted in when made, unmapped when collected): 0.85 ns a byte
 * to make, against 0.06 for a smaller one. A large text joined as a string was made twice more:
 * Buffer.byteLength flattens it, and Node's http sends a string body as one string with the
 * headers. Bytes are written from the pieces directly. Below the bound a string goes to end() and
 * Node encodes it as it writes (Buffer.from took 1.7 µs for 2 KB in a loop).
 */
export function payloadOf(pieces: string[]): string | Buffer {
  let chars = 0;
  for (const p of pieces) chars += p.length;
  if (chars <= LARGE_PAYLOAD_CHARS) return pieces.length === 1 ? pieces[0] : pieces.join('');
  let bytes = 0;
  for (const p of pieces) bytes += Buffer.byteLength(p);
  const out = Buffer.allocUnsafe(bytes);
  let at = 0;
  for (const p of pieces) at += out.write(p, at);
  return out;
}
