// Facts shared by the converters of both directions: reason and usage mappings, tool ids,
// images, reasoning effort and tool arguments. See /work/shared/conversion.md.
import { randomUUID } from 'node:crypto';
import { badRequest } from '../../lib/errors.js';
import { parseDataUrl } from '../../lib/documents.js';

export type ChatFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';
export type MessagesStopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal';

/** stop_reason → finish_reason. A turn that carries tool calls is a tool turn whatever the upstream said. */
export function finishReasonOf(stopReason: string | null | undefined, hasToolCalls: boolean): ChatFinishReason {
  if (hasToolCalls) return 'tool_calls';
  switch (stopReason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default: // end_turn, stop_sequence, pause_turn
      return 'stop';
  }
}

/** finish_reason → stop_reason. */
export function stopReasonOf(finishReason: string | null | undefined, hasToolCalls: boolean): MessagesStopReason {
  if (hasToolCalls) return 'tool_use';
  switch (finishReason) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return 'end_turn';
  }
}

const count = (n: unknown): number => (typeof n === 'number' && n > 0 ? n : 0);

/** Messages-format usage (cache reads and writes are separate from input) → chat usage (prompt includes them). */
export function chatUsageOf(u: any): Record<string, any> {
  const input = count(u?.input_tokens);
  const cacheRead = count(u?.cache_read_input_tokens);
  const cacheWrite = count(u?.cache_creation_input_tokens);
  const output = count(u?.output_tokens);
  const prompt = input + cacheRead + cacheWrite;
  const usage: Record<string, any> = {
    prompt_tokens: prompt,
    completion_tokens: output,
    total_tokens: prompt + output,
    prompt_tokens_details: { cached_tokens: cacheRead },
  };
  const thinking = u?.output_tokens_details?.thinking_tokens;
  if (typeof thinking === 'number') usage.completion_tokens_details = { reasoning_tokens: thinking };
  return usage;
}

/** Chat usage → messages-format usage: cached tokens leave `input_tokens` for `cache_read_input_tokens`. */
export function messagesUsageOf(u: any): Record<string, number> {
  const prompt = count(u?.prompt_tokens);
  const cached = Math.min(count(u?.prompt_tokens_details?.cached_tokens), prompt);
  return {
    input_tokens: prompt - cached,
    output_tokens: count(u?.completion_tokens),
    cache_read_input_tokens: cached,
    cache_creation_input_tokens: 0,
  };
}

const TOOL_ID_REFUSED = /[^a-zA-Z0-9_-]/g;

/** The messages format accepts tool ids matching ^[a-zA-Z0-9_-]+$; tool_use and tool_result ids go through this same map. */
export function sanitizeToolId(id: string): string {
  return id.replace(TOOL_ID_REFUSED, '_');
}

/** Chat tool-call arguments (a JSON string, "" meaning none) → an input object; undefined when not a JSON object. */
export function parseToolArguments(args: unknown): Record<string, unknown> | undefined {
  if (args === undefined || args === null || (typeof args === 'string' && args.trim() === '')) return {};
  if (typeof args !== 'string') return undefined;
  try {
    const v = JSON.parse(args);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

const IMAGE_MEDIA_TYPES: ReadonlySet<string> = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

/** A chat image URL → a messages image source: data URLs become base64, http(s) URLs stay URLs. */
export function imageSourceOf(url: string, param: string): Record<string, string> {
  if (!url.startsWith('data:')) return { type: 'url', url };
  const d = parseDataUrl(url);
  if (!d?.base64) throw badRequest('invalid_image', 'Image data URLs must be base64-encoded.', param);
  const mediaType = d.mediaType === 'image/jpg' ? 'image/jpeg' : d.mediaType;
  if (!IMAGE_MEDIA_TYPES.has(mediaType)) {
    throw badRequest('unsupported_image_type', `Image type ${mediaType} is not supported; use jpeg, png, gif or webp.`, param);
  }
  return { type: 'base64', media_type: mediaType, data: url.slice(d.dataAt) };
}

/** A messages image source → a chat image URL. */
export function imageUrlOf(source: any, param: string): string {
  if (source?.type === 'url') return source.url;
  if (source?.type === 'base64') {
    if (!IMAGE_MEDIA_TYPES.has(source.media_type)) {
      throw badRequest('unsupported_image_type', `Image type ${source.media_type} is not supported; use jpeg, png, gif or webp.`, param);
    }
    return `data:${source.media_type};base64,${source.data}`;
  }
  throw badRequest('unsupported_image_source', 'Only base64 and url image sources can be converted.', param);
}

/** Share of max_tokens given to thinking per chat reasoning effort. */
const EFFORT_SHARE: Record<string, number> = { minimal: 0.1, low: 0.2, medium: 0.5, high: 0.8, xhigh: 0.9, max: 0.95 };
const MIN_THINKING_BUDGET = 1024;

/** Thinking budget for an effort: at least 1024 and below max_tokens; undefined when none fits. */
export function thinkingBudgetOf(effort: string, maxTokens: number): number | undefined {
  const share = EFFORT_SHARE[effort];
  if (share === undefined || maxTokens <= MIN_THINKING_BUDGET) return undefined;
  return Math.min(maxTokens - 1, Math.max(MIN_THINKING_BUDGET, Math.floor(maxTokens * share)));
}

/** Chat reasoning effort for a thinking budget (the inverse of thinkingBudgetOf, coarsely). */
export function effortOfBudget(budget: number, maxTokens: number): 'low' | 'medium' | 'high' {
  const share = maxTokens > 0 ? budget / maxTokens : 1;
  return share < 0.35 ? 'low' : share < 0.65 ? 'medium' : 'high';
}

const idOrRandom = (id: unknown): string => (typeof id === 'string' && id ? id : randomUUID().replaceAll('-', ''));

/** The id a chat client expects for an answer built from a messages-format one. */
export function chatIdOf(id: unknown): string {
  const s = idOrRandom(id);
  return s.startsWith('chatcmpl-') ? s : `chatcmpl-${s}`;
}

/** The id a messages client expects for an answer built from a chat one. */
export function messageIdOf(id: unknown): string {
  const s = idOrRandom(id);
  return s.startsWith('msg_') ? s : `msg_${sanitizeToolId(s)}`;
}
