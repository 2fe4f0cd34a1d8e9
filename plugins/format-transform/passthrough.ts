// Same-format streams: only the model name changes (to the one the client asked for), plus the
// chat usage chunk, which the gateway always requests for billing but a client gets only if it asked.
import type { StreamEvent, StreamHook } from '../../lib/plugin.js';

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
  const target = `"model":${JSON.stringify(model)}`;
  return {
    onEvent(ev: StreamEvent) {
      const j = ev.json;
      if (!j) return ev; // [DONE]
      if (!clientWantsUsage && Array.isArray(j.choices) && j.choices.length === 0 && j.usage) return undefined;
      if (typeof j.model === 'string' && j.model !== model) {
        // Swap the name inside the upstream's own text rather than serializing the chunk again.
        const from = `"model":${JSON.stringify(j.model)}`;
        const data = ev.data;
        const at = data.indexOf(from);
        if (at === -1) {
          j.model = model;
          ev.json = j;
        } else {
          ev.data = data.slice(0, at) + target + data.slice(at + from.length);
        }
      }
      return ev;
    },
  };
}
