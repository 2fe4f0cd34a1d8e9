// Count limits on a parsed body, checked before the schema and the token estimate: every item costs
// validation and estimate work on the event loop, and within the 10 MB body limit a client could
// otherwise send hundreds of thousands (100,000 tools held the event loop for half a second). The
// limits are far above what clients send: OpenAI allows 128 tools, and conversations that fill a
// context window have hundreds of messages, not tens of thousands.
import { GatewayError } from '../../lib/errors.js';
import { stringEnd } from '../../lib/json-scan.js';

/** 4× the 128 tools the chat-completions vendor accepts. */
export const MAX_TOOLS = 512;
export const MAX_MESSAGES = 10_000;
/** Content parts or blocks in all: message contents, the system blocks, tool results' contents and documents' blocks. */
export const MAX_CONTENT_PARTS = 10_000;

/** The 400 for the first limit the body exceeds (the OpenAI code for an array that is too long). */
export function checkCounts(body: Record<string, any>): void {
  if (Array.isArray(body.tools) && body.tools.length > MAX_TOOLS) throw tooMany('tools', MAX_TOOLS, 'tools', body.tools.length);
  const messages = body.messages;
  if (!Array.isArray(messages)) return;
  if (messages.length > MAX_MESSAGES) throw tooMany('messages', MAX_MESSAGES, 'messages', messages.length);
  let parts = 0;
  let crossedAt: string | undefined;
  // A tool result's blocks, a document's blocks (source.content) and a tool result's documents' blocks.
  const count = (content: unknown, nested: number): void => {
    if (!Array.isArray(content)) return;
    parts += content.length;
    if (nested === 0) return;
    for (const part of content) {
      count(part?.content, nested - 1);
      count(part?.source?.content, nested - 1);
    }
  };
  const add = (content: unknown, field: string) => {
    count(content, 2);
    if (parts > MAX_CONTENT_PARTS) crossedAt ??= field;
  };
  add(body.system, 'system');
  for (let i = 0; i < messages.length; i++) add(messages[i]?.content, `messages[${i}].content`);
  if (crossedAt !== undefined) throw tooMany(crossedAt, MAX_CONTENT_PARTS, 'content parts', parts);
}

function tooMany(field: string, limit: number, what: string, got: number): GatewayError {
  return new GatewayError(400, 'invalid_request_error', 'array_above_max_length', `${field}: at most ${limit} ${what} per request (got ${got}).`, { param: field });
}

/**
 * JSON values in one body. Parsing is the one step that cannot be split: 10 MB of tiny values
 * (330,000 one-property schemas) took JSON.parse about half a second, against 50 ms for 10 MB of
 * text. Counted from the text before parsing, so such a body costs a scan, not a parse.
 */
export const MAX_JSON_VALUES = 100_000;

const QUOTE = 0x22, OPEN_OBJECT = 0x7b, OPEN_ARRAY = 0x5b, COMMA = 0x2c;

/**
 * Containers and comma-separated members outside strings: at least the number of values less the
 * scalars that stand alone in their container (one per container), so at least half of them.
 * Strings are skipped by indexOf (stringEnd): a body of text costs a fraction of its parse, where
 * a loop over each character cost twice the parse (100 µs for a 100 KB conversation).
 */
export function jsonValuesAtLeast(text: string, stopAbove: number): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = stringEnd(text, i) - 1;
    else if (c === COMMA || c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++n > stopAbove) return n;
    }
  }
  return n;
}

/** The 400 for a body with more values than MAX_JSON_VALUES, before it is parsed. */
export function checkValueCount(text: string): void {
  if (text.length <= MAX_JSON_VALUES) return; // every value takes at least a character
  if (jsonValuesAtLeast(text, MAX_JSON_VALUES) > MAX_JSON_VALUES) {
    throw new GatewayError(400, 'invalid_request_error', 'too_many_values',
      `The request body has more than ${MAX_JSON_VALUES} JSON values (objects, arrays, members); send a smaller request.`);
  }
}
