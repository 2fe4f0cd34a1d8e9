// Same-format streams: only the model name changes (to the one the client asked for), plus the
// chat usage chunk, which the gateway always requests for billing but a client gets only if it asked.
import { AnswerText, type StreamEvent, type StreamHook } from '../../lib/plugin.js';
import { jsonString } from '../../lib/json-string.js';
import { skipSpace, stringEnd } from '../../lib/json-scan.js';

const MODEL_KEY = '"model"';

/**
 * A whole same-format answer as the upstream's own text with its model renamed, without
 * serializing it again; undefined when the text cannot be edited with certainty, and the answer
 * is then serialized from `body`. Edited only where the text spells `"model"` once, as a key of the
 * top-level object (checked by scanning the text before it, which vendors keep short: the model
 * comes right after the id), followed by the value `body.model` was read as.
 */
export function renamedAnswer(text: string, body: Record<string, unknown>, model: string): AnswerText | undefined {
  const from = body.model;
  if (from === model) return new AnswerText(text);
  if (typeof from !== 'string') return undefined;
  const key = text.indexOf(MODEL_KEY);
  if (key === -1 || text.indexOf(MODEL_KEY, key + MODEL_KEY.length) !== -1 || !atTopLevel(text, key)) return undefined;
  let at = skipSpace(text, key + MODEL_KEY.length);
  if (text.charCodeAt(at) !== 58 /* : */) return undefined;
  at = skipSpace(text, at + 1);
  const value = jsonString(from);
  if (!text.startsWith(value, at)) return undefined;
  return new AnswerText(text.slice(0, at) + jsonString(model) + text.slice(at + value.length));
}

/** Whether `pos` is outside every string and directly inside the outermost object. */
function atTopLevel(text: string, pos: number): boolean {
  let depth = 0;
  for (let i = 0; i < pos; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      i = stringEnd(text, i) - 1;
      if (i >= pos) return false; // `pos` is inside this string
    } else if (c === 123 /* { */ || c === 91 /* [ */) depth++;
    else if (c === 125 /* } */ || c === 93 /* ] */) depth--;
  }
  return depth === 1;
}

/** Messages format: the model appears once, in message_start. */
export function messagesPassthrough(model: string): StreamHook {
  return {
    onEvent(ev: StreamEvent) {
      if (ev.event === 'message_start') {
        const j = ev.json;
        if (j?.message && j.message.model !== model) {
          j.message.model = model;
          ev.json = j;
        }
      }
      return ev;
    },
  };
}

/** Chat format: every chunk names the model; a chunk is rewritten only when its model differs. */
export function chatPassthrough(model: string, clientWantsUsage: boolean): StreamHook {
  const target = `"model":${jsonString(model)}`;
  // The upstream's model, as its chunks spell it: the same in every chunk of a stream.
  let upstreamModel: string | undefined;
  let from = '';
  return {
    onEvent(ev: StreamEvent) {
      // A text delta (never a usage chunk) names its model without being parsed.
      const delta = ev.textDelta;
      const j = delta ? undefined : ev.json;
      if (!delta && !j) return ev; // [DONE]
      if (j && !clientWantsUsage && Array.isArray(j.choices) && j.choices.length === 0 && j.usage) return undefined;
      const upstream = delta ? delta.model : j.model;
      if (typeof upstream === 'string' && upstream !== model) {
        // Swap the name inside the upstream's own text rather than serializing the chunk again.
        if (upstream !== upstreamModel) {
          upstreamModel = upstream;
          from = `"model":${jsonString(upstream)}`;
        }
        const data = ev.data;
        const at = data.indexOf(from);
        if (at === -1) {
          const parsed = ev.json;
          parsed.model = model;
          ev.json = parsed;
        } else {
          ev.data = data.slice(0, at) + target + data.slice(at + from.length);
        }
      }
      return ev;
    },
  };
}
