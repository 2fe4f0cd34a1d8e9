// Count limits on a parsed body, checked before the schema and the token estimate: every item costs
// validation and estimate work on the event loop, and within the 10 MB body limit a client could
// otherwise send hundreds of thousands (100,000 tools held the event loop for half a second). The
// limits are far above what clients send: OpenAI allows 128 tools, and conversations that fill a
// context window have hundreds of messages, not tens of thousands.
import { GatewayError } from '../../lib/errors.js';

/** 4× the 128 tools the chat-completions vendor accepts. */
export const MAX_TOOLS = 512;
export const MAX_MESSAGES = 10_000;
/** Content parts or blocks in all: message contents, the system blocks and tool results' contents. */
export const MAX_CONTENT_PARTS = 10_000;

/** The 400 for the first limit the body exceeds (the OpenAI code for an array that is too long). */
export function checkCounts(body: Record<string, any>): void {
  if (Array.isArray(body.tools) && body.tools.length > MAX_TOOLS) throw tooMany('tools', MAX_TOOLS, 'tools', body.tools.length);
  const messages = body.messages;
  if (!Array.isArray(messages)) return;
  if (messages.length > MAX_MESSAGES) throw tooMany('messages', MAX_MESSAGES, 'messages', messages.length);
  let parts = 0;
  let crossedAt: string | undefined;
  const add = (content: unknown, field: string) => {
    if (!Array.isArray(content)) return;
    parts += content.length;
    for (const part of content) if (Array.isArray(part?.content)) parts += part.content.length; // a tool result's blocks
    if (parts > MAX_CONTENT_PARTS) crossedAt ??= field;
  };
  add(body.system, 'system');
  for (let i = 0; i < messages.length; i++) add(messages[i]?.content, `messages[${i}].content`);
  if (crossedAt !== undefined) throw tooMany(crossedAt, MAX_CONTENT_PARTS, 'content parts', parts);
}

function tooMany(field: string, limit: number, what: string, got: number): GatewayError {
  return new GatewayError(400, 'invalid_request_error', 'array_above_max_length', `${field}: at most ${limit} ${what} per request (got ${got}).`, { param: field });
}
