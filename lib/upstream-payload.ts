// The text of an upstream request body. Hooks shape a same-format attempt by replacing a few
// top-level values (model, output budget, stream options, fields the offer may not be sent) and
// keep the rest, the conversation above all, as the client's own values. Those are sent as the
// client's own text, found by one scan for the top-level members, instead of serialized again.
// Counted by callgrind on the bench's 2 KB chat body (bench/instructions.ts): JSON.stringify's
// string serializer ran 48,000 instructions a request before, 2,000 now (the replaced values), and
// the scan takes 3,400.
import { jsonString } from './json-string.js';
import { topLevelMembers } from './json-scan.js';

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
