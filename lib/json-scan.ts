// Finding values in JSON text without parsing it again: where a string, a value, an object's
// members and an array's items begin and end. The text is one JSON.parse accepted (a request body
// after schema-check), except for stringEnd, which the value count runs before the parse.
// The upstream payload copies the client's members from it (upstream-payload.ts); the estimator
// finds the client's own text of each tool (tokens.ts).

const QUOTE = 0x22, BACKSLASH = 0x5c, COLON = 0x3a, COMMA = 0x2c;
const OPEN_OBJECT = 0x7b, CLOSE_OBJECT = 0x7d, OPEN_ARRAY = 0x5b, CLOSE_ARRAY = 0x5d;

/** The index of the first character at or after `at` that is not JSON whitespace. */
export function skipSpace(text: string, at: number): number {
  for (let c = text.charCodeAt(at); c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = text.charCodeAt(++at));
  return at;
}

/**
 * After the closing quote of the string whose opening quote is at `i` (text.length when it has
 * none). A few characters are looked at one by one (a key, an id, a run of escapes ends there),
 * then indexOf finds the next quote of a long text in one call. Either alone is slow on some text:
 * a loop over each character cost twice JSON.parse's time on a conversation, and indexOf alone
 * cost 9 ns for each escaped quote.
 */
export function stringEnd(text: string, i: number): number {
  const n = text.length;
  let q = i + 1;
  for (;;) {
    for (const stop = Math.min(q + 16, n); q < stop; q++) {
      const c = text.charCodeAt(q);
      if (c === QUOTE) return q + 1;
      if (c === BACKSLASH) q++; // the escaped character is skipped
    }
    const quote = q < n ? text.indexOf('"', q) : -1;
    if (quote === -1) return n;
    let escapes = 0;
    while (text.charCodeAt(quote - 1 - escapes) === BACKSLASH) escapes++;
    if (escapes % 2 === 0) return quote + 1; // an even run of backslashes escapes itself, not the quote
    q = quote + 1;
  }
}

/** Where a member `"key": value` is in the text: [start, end). */
export interface Member {
  start: number;
  /** Where its value starts. */
  value: number;
  end: number;
  /** Its items, when it is the array topLevelMembers was asked to itemize: [start, end) of each. */
  items?: Array<[number, number]>;
}

/**
 * For each key of the object that `text` holds (text JSON.parse accepted), where its member is: the
 * last one of a repeated key, as JSON.parse keeps the last value. Undefined when `text` does not
 * hold an object. The member `itemize` names, if an array, also has its items found (in the same pass).
 */
export function topLevelMembers(text: string, itemize?: string): Map<string, Member> | undefined {
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
    const value = skipSpace(text, i + 1);
    const array = key === itemize ? arrayItems(text, value) : undefined;
    const end = array?.end ?? valueEnd(text, value);
    members.set(key, { start, value, end, items: array?.items });
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
export function valueEnd(text: string, i: number): number {
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
    if (c === COMMA || c === CLOSE_OBJECT || c === CLOSE_ARRAY || c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) return i;
  }
  return i;
}

/**
 * Where each item of the array whose `[` is at `at` is ([start, end) pairs), and where the array
 * ends. Undefined when there is no array there.
 */
export function arrayItems(text: string, at: number): { items: Array<[number, number]>; end: number } | undefined {
  if (text.charCodeAt(at) !== OPEN_ARRAY) return undefined;
  const items: Array<[number, number]> = [];
  let i = skipSpace(text, at + 1);
  if (text.charCodeAt(i) === CLOSE_ARRAY) return { items, end: i + 1 };
  for (;;) {
    const end = valueEnd(text, i);
    items.push([i, end]);
    i = skipSpace(text, end);
    if (text.charCodeAt(i) === CLOSE_ARRAY) return { items, end: i + 1 };
    if (text.charCodeAt(i) !== COMMA) return undefined;
    i = skipSpace(text, i + 1);
  }
}
