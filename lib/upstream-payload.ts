// The text of an upstream request body. Hooks shape a same-format attempt by replacing a few
// top-level values (model, output budget, stream options, fields the offer may not be sent) and
// keep the rest, the conversation above all, as the client's own values. Those are sent as the
// client's own text, found by one scan for the top-level members, instead of serialized again.
// Counted by callgrind on the bench's 2 KB chat body (bench/instructions.ts): JSON.stringify's
// string serializer ran 48,000 instructions a request before, 2,000 now (the replaced values), and
// the scan takes 3,400.
import { jsonString, skipSpace, stringEnd } from './json-string.js';

const QUOTE = 0x22, COLON = 0x3a, COMMA = 0x2c;
const OPEN_OBJECT = 0x7b, CLOSE_OBJECT = 0x7d, OPEN_ARRAY = 0x5b, CLOSE_ARRAY = 0x5d;

/**
 * `body` as JSON text. `client` must be `JSON.parse(text)`, unchanged since (ctx.body is read-only
 * to hooks): each top-level value of `body` that is still the client's own (===) is copied from
 * `text`, the others are serialized. The same JSON as `JSON.stringify(body)` but for the copied
 * values' own spelling (numbers, escapes and spaces as the client wrote them).
 */
export function upstreamPayload(body: Record<string, any>, client: Record<string, any>, text: string): string {
  const members = topLevelMembers(text);
  if (!members) return JSON.stringify(body);
  let json = '{';
  let first = true;
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
    json += first ? member : `,${member}`;
    first = false;
  }
  return `${json}}`;
}

/** Where a member `"key": value` is in the text: [start, end). */
export interface Member {
  start: number;
  end: number;
}

/**
 * For each key of the object that `text` holds (text JSON.parse accepted), where its member is: the
 * last one of a repeated key, as JSON.parse keeps the last value. Undefined when `text` does not
 * hold an object.
 */
export function topLevelMembers(text: string): Map<string, Member> | undefined {
  const members = new Map<string, Member>();
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== OPEN_OBJECT) return undefined;
  i = skipSpace(text, i + 1);
  if (text.charCodeAt(i) === CLOSE_OBJECT) return members;
  for (;;) {
    const start = i;
    const keyEnd = stringEnd(text, i);
    const key = keyOf(text, start, keyEnd);
    i = skipSpace(text, keyEnd);
    if (text.charCodeAt(i) !== COLON) return undefined;
    const end = valueEnd(text, skipSpace(text, i + 1));
    members.set(key, { start, end });
    i = skipSpace(text, end);
    if (text.charCodeAt(i) === CLOSE_OBJECT) return members;
    if (text.charCodeAt(i) !== COMMA) return undefined;
    i = skipSpace(text, i + 1);
  }
}


/** A key as JSON.parse reads it: escapes decoded (rare in keys, so parsed only when present). */
function keyOf(text: string, start: number, end: number): string {
  const key = text.slice(start + 1, end - 1);
  return key.includes('\\') ? JSON.parse(text.slice(start, end)) : key;
}

/** After the value that starts at `i`: a string, a container (strings inside skipped whole) or a literal. */
function valueEnd(text: string, i: number): number {
  const first = text.charCodeAt(i);
  if (first === QUOTE) return stringEnd(text, i);
  if (first === OPEN_OBJECT || first === OPEN_ARRAY) {
    let depth = 0;
    for (; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === QUOTE) i = stringEnd(text, i) - 1;
      else if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++;
      else if ((c === CLOSE_OBJECT || c === CLOSE_ARRAY) && --depth === 0) return i + 1;
    }
    return i;
  }
  // A number, true, false or null: up to the next separator or space.
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === COMMA || c === CLOSE_OBJECT || c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) return i;
  }
  return i;
}
