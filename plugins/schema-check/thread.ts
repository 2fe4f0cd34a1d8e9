// Message threads (the messages format's `thread` field, a beta): with `{type: "create"}` the vendor
// holds the conversation under the reply's id, and a later `{type: "continue", previous_message_id}`
// sends only the new messages. This gateway holds no thread: one would tie a conversation to the
// upstream account of one offer (no failover, no cheaper offer), and a continue's credit hold could
// not see the input tokens the upstream bills for the part it stored. So:
// - a create is served as a plain request: the full conversation is in the body; the field is never
//   forwarded to any upstream (offer-pick's extras.ts), and the reply is what it would be without it;
// - a continue gets the vendor's own answer for a thread it no longer holds, 404 with
//   `error.details.error_code: "thread_not_found"`, on which the official SDK sends the whole
//   conversation again (its tool runner stops threading after two such answers in a row).
import type { Route } from '../../lib/context.js';
import { GatewayError } from '../../lib/errors.js';

/** The previous_message_id quoted in the answer is the client's own text: cut to this many characters. */
const QUOTED_ID_CHARS = 100;

/**
 * A continue is answered before the body is validated: its body is only the new turn (no `system`
 * or `tools`, and `messages` may be empty after a `pause_turn`), which the replay replaces anyway.
 * A malformed `thread` is left to the schema (400 naming the field).
 */
export function refuseThreadContinue(route: Route, body: Record<string, any>): void {
  if (route !== 'messages') return;
  const thread = body.thread;
  if (thread === null || typeof thread !== 'object' || thread.type !== 'continue') return;
  const previous = thread.previous_message_id;
  if (typeof previous !== 'string' || previous === '') return;
  const quoted = JSON.stringify(previous.length > QUOTED_ID_CHARS ? `${previous.slice(0, QUOTED_ID_CHARS)}…` : previous);
  throw new GatewayError(
    404,
    'not_found_error',
    'thread_not_found',
    `No message thread continues from ${quoted}: this gateway does not hold message threads. Send the whole conversation (with thread {"type": "create"}, or without thread).`,
    { param: 'thread.previous_message_id', details: { error_code: 'thread_not_found' } },
  );
}
