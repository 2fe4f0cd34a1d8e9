// Request conversion: a messages-format body → a chat-completions body for a chat upstream.
// Pure: builds fresh objects and never mutates the client's body (failover reuses it).
import { badRequest } from '../../lib/errors.js';
import { PDF_MEDIA_TYPE } from '../../lib/documents.js';
import { effortOfBudget, imageUrlOf } from './shared.js';

export interface MessagesToChatOptions {
  stream: boolean;
}

type Part = Record<string, any>;
type ChatMessage = Record<string, any>;

export function messagesToChatRequest(body: Record<string, any>, opts: MessagesToChatOptions): Record<string, any> {
  const messages: ChatMessage[] = [];
  if (body.system !== undefined && body.system !== null) {
    const content = chatContent(textParts(body.system, 'system'));
    if (content !== null) messages.push({ role: 'system', content });
  }
  const input: any[] = Array.isArray(body.messages) ? body.messages : [];
  input.forEach((m, i) => {
    const param = `messages[${i}].content`;
    switch (m?.role) {
      case 'system': {
        const content = chatContent(textParts(m.content, param));
        if (content !== null) messages.push({ role: 'system', content });
        break;
      }
      case 'user':
        pushUser(messages, m.content, param);
        break;
      case 'assistant':
        pushAssistant(messages, m.content, param);
        break;
      default:
        throw badRequest('unsupported_role', `Message role ${String(m?.role)} cannot be converted.`, `messages[${i}].role`);
    }
  });

  const out: Record<string, any> = { model: body.model, messages, max_completion_tokens: body.max_tokens };
  if (Array.isArray(body.tools) && body.tools.length > 0) {
    out.tools = body.tools.map(toolOf);
    const tc = body.tool_choice;
    if (tc?.type === 'auto') out.tool_choice = 'auto';
    else if (tc?.type === 'any') out.tool_choice = 'required';
    else if (tc?.type === 'none') out.tool_choice = 'none';
    else if (tc?.type === 'tool') out.tool_choice = { type: 'function', function: { name: tc.name } };
    if (tc?.disable_parallel_tool_use === true && tc.type !== 'none') out.parallel_tool_calls = false;
  }
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) out.stop = body.stop_sequences;
  if (typeof body.temperature === 'number') out.temperature = body.temperature;
  if (typeof body.top_p === 'number') out.top_p = body.top_p;
  if (typeof body.metadata?.user_id === 'string') out.user = body.metadata.user_id;

  const effort = reasoningEffortOf(body);
  if (effort) out.reasoning_effort = effort;
  const format = body.output_config?.format;
  if (format?.type === 'json_schema' && format.schema) {
    out.response_format = { type: 'json_schema', json_schema: { name: 'output', schema: format.schema } };
  }
  if (opts.stream) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  return out;
}

/** output_config.effort wins; else a thinking budget maps to low/medium/high by its share of max_tokens. */
function reasoningEffortOf(body: Record<string, any>): string | undefined {
  const effort = body.output_config?.effort;
  if (typeof effort === 'string') return effort;
  const thinking = body.thinking;
  if (thinking?.type === 'enabled' && typeof thinking.budget_tokens === 'number') {
    return effortOfBudget(thinking.budget_tokens, body.max_tokens);
  }
  if (thinking?.type === 'adaptive') return 'medium';
  return undefined;
}

/** Text blocks → chat text parts, cache_control kept; empty texts dropped. */
function textParts(content: unknown, param: string): Part[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw badRequest('invalid_content', 'Content must be a string or an array of blocks.', param);
  const out: Part[] = [];
  content.forEach((b, k) => pushTextBlock(out, b, `${param}[${k}]`));
  return out;
}

function pushTextBlock(out: Part[], b: any, param: string): void {
  if (b?.type !== 'text' || typeof b.text !== 'string') {
    throw badRequest('unsupported_content', `Content block type ${String(b?.type)} is not supported here.`, param);
  }
  if (b.text !== '') out.push(textPart(b));
}

function textPart(b: any): Part {
  const p: Part = { type: 'text', text: b.text };
  if (b.cache_control) p.cache_control = b.cache_control;
  return p;
}

/** A lone text without cache_control is sent as a plain string, which every chat upstream accepts. */
function chatContent(parts: Part[]): string | Part[] | null {
  if (parts.length === 0) return null;
  if (parts.length === 1 && parts[0].type === 'text' && !parts[0].cache_control) return parts[0].text;
  return parts;
}

function imagePart(b: any, param: string): Part {
  return { type: 'image_url', image_url: { url: imageUrlOf(b.source, `${param}.source`) } };
}

/**
 * A document → chat parts: a base64 PDF becomes a file part (its title the file name), a text
 * document or a document of blocks its text and image parts, led by the title; the document's
 * context goes first. Citations have no chat counterpart. A document given by URL or by file id
 * cannot be carried (offer-pick sends those to messages-format offers only).
 */
function documentParts(b: any, param: string): Part[] {
  const source = b.source;
  const title = typeof b.title === 'string' && b.title !== '' ? b.title : undefined;
  const parts: Part[] = typeof b.context === 'string' && b.context !== '' ? [{ type: 'text', text: b.context }] : [];
  if (source?.type === 'base64' && source.media_type === PDF_MEDIA_TYPE) {
    parts.push({ type: 'file', file: { filename: title ?? 'document.pdf', file_data: `data:${PDF_MEDIA_TYPE};base64,${source.data}` } });
  } else if (source?.type === 'text' || source?.type === 'content') {
    if (title) parts.push({ type: 'text', text: title });
    const content = source.type === 'text' ? source.data : source.content;
    const at = `${param}.source.${source.type === 'text' ? 'data' : 'content'}`;
    if (!Array.isArray(content)) parts.push(...textParts(content, at));
    else {
      content.forEach((c: any, n: number) => {
        if (c?.type === 'image') parts.push(imagePart(c, `${at}[${n}]`));
        else pushTextBlock(parts, c, `${at}[${n}]`);
      });
    }
  } else {
    const what = source?.type === 'base64' ? `of type ${String(source.media_type)}` : `given by ${source?.type === 'url' ? 'URL' : 'file id'}`;
    throw badRequest('unsupported_document', `A document ${what} cannot be sent to this model's chat-format provider; send a PDF or a text as data.`, `${param}.source`);
  }
  const last = parts[parts.length - 1];
  if (b.cache_control && last) last.cache_control = b.cache_control;
  return parts;
}

/**
 * A user turn: its tool results become `tool` messages first (they must follow the assistant's
 * tool_calls), then the rest as one user message. Images and documents inside tool results, which
 * chat tool messages cannot carry, join that user message.
 */
function pushUser(messages: ChatMessage[], content: unknown, param: string): void {
  if (!Array.isArray(content)) {
    const text = chatContent(textParts(content, param));
    if (text !== null) messages.push({ role: 'user', content: text });
    return;
  }
  const parts: Part[] = [];
  content.forEach((b, k) => {
    const p = `${param}[${k}]`;
    switch (b?.type) {
      case 'text':
        if (typeof b.text === 'string' && b.text !== '') parts.push(textPart(b));
        break;
      case 'image':
        parts.push(imagePart(b, p));
        break;
      case 'document':
        parts.push(...documentParts(b, p));
        break;
      case 'tool_result': {
        const text: Part[] = [];
        if (typeof b.content === 'string') {
          if (b.content !== '') text.push({ type: 'text', text: b.content });
        } else if (Array.isArray(b.content)) {
          b.content.forEach((c: any, n: number) => {
            if (c?.type === 'image') parts.push(imagePart(c, `${p}.content[${n}]`));
            else if (c?.type === 'document') parts.push(...documentParts(c, `${p}.content[${n}]`));
            else pushTextBlock(text, c, `${p}.content[${n}]`);
          });
        }
        messages.push({ role: 'tool', tool_call_id: b.tool_use_id, content: chatContent(text) ?? '' });
        break;
      }
      default:
        throw badRequest('unsupported_content', `Content block type ${String(b?.type)} is not supported here.`, p);
    }
  });
  const rest = chatContent(parts);
  if (rest !== null) messages.push({ role: 'user', content: rest });
}

/** An assistant turn: thinking → reasoning_content + reasoning_details (unchanged), text → content, tool_use → tool_calls. */
function pushAssistant(messages: ChatMessage[], content: unknown, param: string): void {
  if (!Array.isArray(content)) {
    const text = chatContent(textParts(content, param));
    if (text !== null) messages.push({ role: 'assistant', content: text });
    return;
  }
  const text: Part[] = [];
  const toolCalls: Part[] = [];
  const reasoning: Part[] = [];
  let reasoningText = '';
  content.forEach((b, k) => {
    switch (b?.type) {
      case 'text':
        if (typeof b.text === 'string' && b.text !== '') text.push(textPart(b));
        break;
      case 'tool_use':
        toolCalls.push({
          id: b.id,
          type: 'function',
          function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) },
        });
        break;
      case 'thinking': {
        const r: Part = { type: 'thinking', thinking: b.thinking };
        // "" marks reasoning that never had a signature (see reasoningBlocksOf): nothing to pass back.
        if (b.signature) r.signature = b.signature;
        reasoning.push(r);
        reasoningText += b.thinking ?? '';
        break;
      }
      case 'redacted_thinking':
        reasoning.push({ type: 'redacted_thinking', data: b.data });
        break;
      default:
        throw badRequest('unsupported_content', `Content block type ${String(b?.type)} is not supported here.`, `${param}[${k}]`);
    }
  });
  const msg: ChatMessage = { role: 'assistant', content: chatContent(text) };
  if (toolCalls.length > 0) msg.tool_calls = toolCalls;
  if (reasoning.length > 0) {
    if (reasoningText !== '') msg.reasoning_content = reasoningText;
    msg.reasoning_details = reasoning;
  }
  if (msg.content !== null || toolCalls.length > 0 || reasoning.length > 0) messages.push(msg);
}

function toolOf(t: any, k: number): Part {
  if ((t?.type !== undefined && t.type !== 'custom') || typeof t?.name !== 'string') {
    throw badRequest('unsupported_tool', `Tool type ${String(t?.type)} cannot be served by this model's provider.`, `tools[${k}]`);
  }
  const fn: Part = { name: t.name, parameters: t.input_schema ?? { type: 'object', properties: {} } };
  if (typeof t.description === 'string') fn.description = t.description;
  if (typeof t.strict === 'boolean') fn.strict = t.strict;
  return { type: 'function', function: fn };
}
