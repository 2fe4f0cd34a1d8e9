// Request conversion: a chat-completions body → a messages-format body for a messages upstream.
// Pure: builds fresh objects and never mutates the client's body (failover reuses it).
import { badRequest } from '../../lib/errors.js';
import { parseDataUrl, PDF_MEDIA_TYPE, TEXT_MEDIA_TYPE } from '../../lib/documents.js';
import { imageSourceOf, parseToolArguments, sanitizeToolId, thinkingBudgetOf } from './shared.js';

export interface ChatToMessagesOptions {
  /** max_tokens when the client set neither max_completion_tokens nor max_tokens. */
  defaultMaxTokens: number;
  stream: boolean;
}

type Block = Record<string, any>;
interface Turn {
  role: 'user' | 'assistant';
  content: Block[];
}

/** Text put in a user turn the conversation lacks where the messages format needs one first. */
export const CONTINUE_TEXT = '(continue)';
/** The messages format accepts at most this many cache_control breakpoints. */
const MAX_CACHE_BREAKPOINTS = 4;

export function chatToMessagesRequest(body: Record<string, any>, opts: ChatToMessagesOptions): Record<string, any> {
  const out: Record<string, any> = { model: body.model };
  const maxTokens: number = body.max_completion_tokens ?? body.max_tokens ?? opts.defaultMaxTokens;
  out.max_tokens = maxTokens;

  const system: Block[] = [];
  const turns: Turn[] = [];
  const messages: any[] = Array.isArray(body.messages) ? body.messages : [];
  messages.forEach((m, i) => {
    switch (m?.role) {
      case 'system':
      case 'developer':
        system.push(...withMessageCacheControl(textBlocks(m.content, `messages[${i}].content`), m));
        break;
      case 'user':
        appendTurn(turns, 'user', withMessageCacheControl(userBlocks(m.content, `messages[${i}].content`), m));
        break;
      case 'assistant':
        appendTurn(turns, 'assistant', withMessageCacheControl(assistantBlocks(m, i), m));
        break;
      case 'tool':
        appendTurn(turns, 'user', withMessageCacheControl([toolResultBlock(m, i)], m));
        break;
      default:
        throw badRequest('unsupported_role', `Message role ${String(m?.role)} cannot be converted.`, `messages[${i}].role`);
    }
  });
  if (system.length > 0) out.system = system;
  const placed = placeToolResults(turns);
  if (placed[0]?.role !== 'user') placed.unshift({ role: 'user', content: [{ type: 'text', text: CONTINUE_TEXT }] });
  out.messages = placed;

  const tools = Array.isArray(body.tools) && body.tools.length > 0 ? body.tools.map(toolOf) : undefined;
  if (tools) {
    out.tools = tools;
    const choice = toolChoiceOf(body.tool_choice, body.parallel_tool_calls);
    if (choice) out.tool_choice = choice;
  } else {
    // The messages format refuses tool blocks in a history without tools: declare the ones used, forbid calls.
    const used = toolNamesUsed(placed);
    if (used.size > 0) {
      out.tools = [...used].map((name) => ({ name, input_schema: { type: 'object', properties: {} } }));
      out.tool_choice = { type: 'none' };
    }
  }

  const stop = stopSequencesOf(body.stop);
  if (stop.length > 0) out.stop_sequences = stop;

  const effort = body.reasoning_effort;
  // Thinking is refused together with a forced tool choice: the client's tool choice wins.
  const forced = out.tool_choice?.type === 'any' || out.tool_choice?.type === 'tool';
  const budget = typeof effort === 'string' && effort !== 'none' && !forced ? thinkingBudgetOf(effort, maxTokens) : undefined;
  if (budget !== undefined) {
    out.thinking = { type: 'enabled', budget_tokens: budget };
    // Extended thinking refuses a changed temperature or a narrowed top_p: leave both at their defaults.
  } else {
    if (typeof body.temperature === 'number') out.temperature = Math.min(1, Math.max(0, body.temperature));
    if (typeof body.top_p === 'number') out.top_p = body.top_p;
  }

  if (typeof body.user === 'string') out.metadata = { user_id: body.user };
  const rf = body.response_format;
  if (rf?.type === 'json_schema' && rf.json_schema?.schema) {
    out.output_config = { format: { type: 'json_schema', schema: rf.json_schema.schema } };
  }
  if (opts.stream) out.stream = true;
  limitCacheBreakpoints(out);
  return out;
}

/** Append a turn, merging it into the previous one of the same role (the messages format alternates roles). */
function appendTurn(turns: Turn[], role: Turn['role'], blocks: Block[]): void {
  if (blocks.length === 0) return;
  const last = turns[turns.length - 1];
  if (last?.role === role) last.content.push(...blocks);
  else turns.push({ role, content: blocks });
}

/** Some clients mark a whole message with cache_control: it belongs on the message's last block. */
function withMessageCacheControl(blocks: Block[], m: any): Block[] {
  const last = blocks[blocks.length - 1];
  if (m.cache_control && last && !last.cache_control) last.cache_control = m.cache_control;
  return blocks;
}

function textBlock(text: string, cacheControl: unknown): Block {
  const b: Block = { type: 'text', text };
  if (cacheControl) b.cache_control = cacheControl;
  return b;
}

/** The messages format refuses text blocks without non-whitespace text. */
const isBlank = (text: string): boolean => text.trim() === '';

/** Text content (string or text parts; `refusal` parts count as text). Blank texts are dropped. */
function textBlocks(content: unknown, param: string): Block[] {
  if (content === null || content === undefined) return [];
  if (typeof content === 'string') return isBlank(content) ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw badRequest('invalid_content', 'Message content must be a string or an array of parts.', param);
  const out: Block[] = [];
  content.forEach((p, k) => pushTextPart(out, p, `${param}[${k}]`));
  return out;
}

function pushTextPart(out: Block[], p: any, param: string): void {
  const text = p?.type === 'text' ? p.text : p?.type === 'refusal' ? p.refusal : undefined;
  if (typeof text !== 'string') throw badRequest('unsupported_content', `Content part type ${String(p?.type)} is not supported here.`, param);
  if (!isBlank(text)) out.push(textBlock(text, p.cache_control));
}

function userBlocks(content: unknown, param: string): Block[] {
  if (!Array.isArray(content)) return textBlocks(content, param);
  const out: Block[] = [];
  content.forEach((p, k) => {
    if (p?.type === 'image_url') {
      const url = typeof p.image_url === 'string' ? p.image_url : p.image_url?.url;
      if (typeof url !== 'string' || url === '') throw badRequest('invalid_image', 'image_url.url is required.', `${param}[${k}].image_url.url`);
      const b: Block = { type: 'image', source: imageSourceOf(url, `${param}[${k}].image_url.url`) };
      if (p.cache_control) b.cache_control = p.cache_control;
      out.push(b);
    } else if (p?.type === 'file') out.push(documentBlock(p, `${param}[${k}]`));
    else pushTextPart(out, p, `${param}[${k}]`);
  });
  return out;
}

/**
 * A chat file part → a document block: a PDF as base64, a text file as a text document; the file
 * name becomes the title. A file id names a file stored at the chat vendor, which a messages-format
 * provider cannot read (offer-pick sends those to chat-format offers only).
 */
function documentBlock(p: any, param: string): Block {
  const data = p.file?.file_data;
  if (typeof data !== 'string') {
    throw badRequest('unsupported_document', "A file given by file_id cannot be sent to this model's messages-format provider; send its content as file_data.", `${param}.file`);
  }
  const url = parseDataUrl(data);
  const base64 = url?.base64 ? data.slice(url.dataAt) : undefined;
  let source: Block;
  if (base64 !== undefined && url!.mediaType === PDF_MEDIA_TYPE) source = { type: 'base64', media_type: PDF_MEDIA_TYPE, data: base64 };
  else if (base64 !== undefined && url!.mediaType === TEXT_MEDIA_TYPE) source = { type: 'text', media_type: TEXT_MEDIA_TYPE, data: Buffer.from(base64, 'base64').toString('utf8') };
  else {
    throw badRequest('unsupported_document', 'file_data must be a base64 data URL of a PDF (data:application/pdf;base64,…) or of plain text to be sent to this model\'s messages-format provider.', `${param}.file.file_data`);
  }
  const b: Block = { type: 'document', source };
  if (typeof p.file.filename === 'string' && p.file.filename !== '') b.title = p.file.filename;
  if (p.cache_control) b.cache_control = p.cache_control;
  return b;
}

/** Reasoning first (signed thinking and redacted thinking, unchanged), then text, then tool calls. */
function assistantBlocks(m: any, i: number): Block[] {
  const out: Block[] = [];
  if (Array.isArray(m.reasoning_details)) {
    for (const r of m.reasoning_details) {
      // An unsigned thinking block cannot be verified upstream and would fail the request.
      if (r?.type === 'thinking' && typeof r.signature === 'string' && r.signature !== '') {
        out.push({ type: 'thinking', thinking: r.thinking ?? '', signature: r.signature });
      } else if (r?.type === 'redacted_thinking' && typeof r.data === 'string') {
        out.push({ type: 'redacted_thinking', data: r.data });
      }
    }
  }
  out.push(...textBlocks(m.content, `messages[${i}].content`));
  if (Array.isArray(m.tool_calls)) {
    m.tool_calls.forEach((tc: any, j: number) => {
      const param = `messages[${i}].tool_calls[${j}]`;
      const input = parseToolArguments(tc?.function?.arguments);
      if (!input) throw badRequest('invalid_tool_arguments', 'Tool call arguments must be a JSON object.', `${param}.function.arguments`);
      if (typeof tc.id !== 'string' || tc.id === '') throw badRequest('invalid_tool_call', 'Tool calls need an id.', `${param}.id`);
      out.push({ type: 'tool_use', id: sanitizeToolId(tc.id), name: tc.function.name, input });
    });
  }
  return out;
}

function toolResultBlock(m: any, i: number): Block {
  if (typeof m.tool_call_id !== 'string' || m.tool_call_id === '') {
    throw badRequest('invalid_tool_result', 'Tool messages need a tool_call_id.', `messages[${i}].tool_call_id`);
  }
  const b: Block = { type: 'tool_result', tool_use_id: sanitizeToolId(m.tool_call_id) };
  const param = `messages[${i}].content`;
  if (typeof m.content === 'string') {
    if (m.content !== '') b.content = m.content;
  } else {
    const blocks = userBlocks(m.content, param);
    if (blocks.length > 0) b.content = blocks;
  }
  return b;
}

/**
 * Each tool_use's results go first in the user turn right after it, wherever the client put them
 * (the messages format refuses results elsewhere). Results without a known tool_use stay in place.
 */
function placeToolResults(turns: Turn[]): Turn[] {
  const owner = new Map<string, number>();
  turns.forEach((t, i) => {
    if (t.role === 'assistant') for (const b of t.content) if (b.type === 'tool_use') owner.set(b.id, i);
  });
  if (owner.size === 0) return turns;
  const resultsOf = new Map<number, Block[]>();
  for (const t of turns) {
    if (t.role !== 'user') continue;
    const rest: Block[] = [];
    for (const b of t.content) {
      const o = b.type === 'tool_result' ? owner.get(b.tool_use_id) : undefined;
      if (o === undefined) rest.push(b);
      else {
        let list = resultsOf.get(o);
        if (!list) resultsOf.set(o, (list = []));
        list.push(b);
      }
    }
    t.content = rest;
  }
  const out: Turn[] = [];
  turns.forEach((t, i) => {
    appendTurn(out, t.role, t.content);
    const results = resultsOf.get(i);
    if (results) appendTurn(out, 'user', results);
  });
  return out;
}

function toolNamesUsed(turns: Turn[]): Set<string> {
  const names = new Set<string>();
  for (const t of turns) if (t.role === 'assistant') for (const b of t.content) if (b.type === 'tool_use') names.add(b.name);
  return names;
}

function toolOf(t: any, k: number): Block {
  const f = t?.function;
  if (t?.type !== 'function' || typeof f?.name !== 'string') {
    throw badRequest('unsupported_tool', 'Only function tools can be converted.', `tools[${k}]`);
  }
  const params = f.parameters;
  const tool: Block = {
    name: f.name,
    // The messages format requires an object schema with a type.
    input_schema: params?.type ? params : { type: 'object', properties: {}, ...params },
  };
  if (typeof f.description === 'string') tool.description = f.description;
  if (typeof f.strict === 'boolean') tool.strict = f.strict;
  if (t.cache_control) tool.cache_control = t.cache_control;
  return tool;
}

function toolChoiceOf(choice: unknown, parallel: unknown): Block | undefined {
  let out: Block | undefined;
  if (choice === 'auto') out = { type: 'auto' };
  else if (choice === 'none') return { type: 'none' };
  else if (choice === 'required') out = { type: 'any' };
  else if (typeof choice === 'object' && choice !== null) {
    const name = (choice as any).function?.name;
    if (typeof name === 'string') out = { type: 'tool', name };
  }
  if (parallel === false) {
    out ??= { type: 'auto' };
    out.disable_parallel_tool_use = true;
  }
  return out;
}

/** The messages format refuses whitespace-only stop sequences. */
function stopSequencesOf(stop: unknown): string[] {
  const list = typeof stop === 'string' ? [stop] : Array.isArray(stop) ? stop : [];
  return list.filter((s): s is string => typeof s === 'string' && s.trim() !== '');
}

/** Keep the last MAX_CACHE_BREAKPOINTS cache_control marks in prompt order (tools, system, messages). */
function limitCacheBreakpoints(req: Record<string, any>): void {
  const marked: Block[] = [];
  const visit = (b: Block) => {
    if (b.cache_control) marked.push(b);
    if (Array.isArray(b.content)) b.content.forEach(visit);
  };
  req.tools?.forEach(visit);
  req.system?.forEach(visit);
  for (const t of req.messages as Turn[]) t.content.forEach(visit);
  for (let k = 0; k < marked.length - MAX_CACHE_BREAKPOINTS; k++) delete marked[k].cache_control;
}
