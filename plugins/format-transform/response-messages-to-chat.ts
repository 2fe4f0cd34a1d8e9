// Response conversion: a messages-format answer → a chat completion for a chat client.
import { chatIdOf, chatUsageOf, finishReasonOf } from './shared.js';

/** `model` is the model the client asked for; `created` is in Unix seconds. */
export function chatCompletionOf(msg: any, model: string, created: number): Record<string, any> {
  let text: string | null = null;
  let reasoningText: string | null = null;
  const toolCalls: Record<string, any>[] = [];
  const reasoning: Record<string, any>[] = [];
  for (const b of Array.isArray(msg?.content) ? msg.content : []) {
    switch (b?.type) {
      case 'text':
        text = (text ?? '') + b.text;
        break;
      case 'tool_use':
        toolCalls.push({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } });
        break;
      case 'thinking':
        reasoningText = (reasoningText ?? '') + b.thinking;
        reasoning.push({ type: 'thinking', thinking: b.thinking, signature: b.signature });
        break;
      case 'redacted_thinking':
        reasoning.push({ type: 'redacted_thinking', data: b.data });
        break;
      default:
        break; // server-tool blocks have no chat counterpart
    }
  }
  const message: Record<string, any> = { role: 'assistant', content: text, refusal: null };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  if (reasoning.length > 0) {
    if (reasoningText !== null) message.reasoning_content = reasoningText;
    message.reasoning_details = reasoning;
  }
  return {
    id: chatIdOf(msg?.id),
    object: 'chat.completion',
    created,
    model,
    choices: [{ index: 0, message, finish_reason: finishReasonOf(msg?.stop_reason, toolCalls.length > 0), logprobs: null }],
    usage: chatUsageOf(msg?.usage),
  };
}
