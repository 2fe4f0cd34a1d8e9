// Response conversion: a chat completion → a messages-format answer for a messages client.
import { messageIdOf, messagesUsageOf, parseToolArguments, sanitizeToolId, stopReasonOf } from './shared.js';

/** `model` is the model the client asked for. */
export function messageOf(completion: any, model: string): Record<string, any> {
  const choice = completion?.choices?.[0];
  const m = choice?.message ?? {};
  const content: Record<string, any>[] = [...reasoningBlocksOf(m)];
  const text = textOf(m.content);
  if (text !== '') content.push({ type: 'text', text });
  if (typeof m.refusal === 'string' && m.refusal !== '') content.push({ type: 'text', text: m.refusal });
  const toolCalls: any[] = Array.isArray(m.tool_calls) ? m.tool_calls : [];
  for (const tc of toolCalls) {
    content.push({
      type: 'tool_use',
      id: sanitizeToolId(String(tc.id ?? '')),
      name: tc.function?.name,
      // Malformed arguments from the model become an empty input rather than a broken answer.
      input: parseToolArguments(tc.function?.arguments) ?? {},
    });
  }
  return {
    id: messageIdOf(completion?.id),
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReasonOf(choice?.finish_reason, toolCalls.length > 0),
    stop_sequence: null,
    usage: messagesUsageOf(completion?.usage),
  };
}

/**
 * reasoning_details (unchanged) win over reasoning_content, which carries the same text without
 * signatures. An unsigned block gets signature "" as the messages format always has one.
 */
function reasoningBlocksOf(m: any): Record<string, any>[] {
  if (Array.isArray(m.reasoning_details) && m.reasoning_details.length > 0) {
    const out: Record<string, any>[] = [];
    for (const r of m.reasoning_details) {
      if (r?.type === 'thinking') out.push({ type: 'thinking', thinking: r.thinking ?? '', signature: r.signature ?? '' });
      else if (r?.type === 'redacted_thinking') out.push({ type: 'redacted_thinking', data: r.data });
    }
    return out;
  }
  const text = m.reasoning_content ?? m.reasoning;
  return typeof text === 'string' && text !== '' ? [{ type: 'thinking', thinking: text, signature: '' }] : [];
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let s = '';
  for (const p of content) if (p?.type === 'text' && typeof p.text === 'string') s += p.text;
  return s;
}
