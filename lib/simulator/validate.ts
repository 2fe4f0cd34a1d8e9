// The request checks the real vendors make, with their kind of messages: the gateway's conversions
// must produce bodies a strict upstream accepts (see the failure modes in shared/conversion.md).
import { badRequest } from '../errors.js';
import { dataUrlBytes, parseDataUrl, PDF_MEDIA_TYPE, TEXT_MEDIA_TYPE } from '../documents.js';
import { thinkingSignature } from './answer.js';
import { outputFormatOf, toolChoiceOf, toolDefinitions, forcesCall } from './request-options.js';
import { arrayOf, isObject } from './request-text.js';

const TOOL_ID = /^[a-zA-Z0-9_-]+$/;
const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);
const MAX_CACHE_BREAKPOINTS = 4;

const invalid = (message: string, param: string | null = null): never => {
  throw badRequest('invalid_request_error', message, param);
};

/** Messages format (`countOnly`: the count_tokens route, which takes no max_tokens). Throws a 400 GatewayError. */
export function validateMessagesRequest(b: Record<string, any>, countOnly: boolean): void {
  if (typeof b.model !== 'string' || b.model === '') invalid('model: Field required');
  if (!Array.isArray(b.messages) || b.messages.length === 0) invalid('messages: Field required');
  if (!countOnly) {
    if (b.max_tokens === undefined) invalid('max_tokens: Field required');
    if (!Number.isInteger(b.max_tokens) || b.max_tokens < 1) invalid('max_tokens: Input should be greater than or equal to 1');
  }
  if (b.temperature !== undefined && !(typeof b.temperature === 'number' && b.temperature >= 0 && b.temperature <= 1)) {
    invalid('temperature: Input should be less than or equal to 1');
  }
  for (const s of arrayOf(b.stop_sequences)) {
    if (typeof s !== 'string' || s.trim() === '') invalid('stop_sequences: each stop sequence must contain non-whitespace');
  }
  if (b.thinking?.type === 'enabled') {
    const budget = b.thinking.budget_tokens;
    if (!Number.isInteger(budget) || budget < 1024) invalid('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
    if (!countOnly && budget >= b.max_tokens) invalid('`max_tokens` must be greater than `thinking.budget_tokens`');
  }

  let breakpoints = 0;
  const count = (block: unknown) => {
    if (isObject(block) && isObject(block.cache_control)) breakpoints++;
  };
  arrayOf(b.system).forEach(count);
  arrayOf(b.tools).forEach(count);

  let usesTools = false;
  b.messages.forEach((m: unknown, i: number) => {
    if (!isObject(m) || !['user', 'assistant', 'system'].includes(m.role)) invalid(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    const msg = m as Record<string, any>;
    const last = i === b.messages.length - 1;
    if (typeof msg.content === 'string') {
      if (msg.content === '' && !(last && msg.role === 'assistant')) {
        invalid(`messages.${i}: all messages must have non-empty content except for the optional final assistant message`);
      }
      return;
    }
    if (!Array.isArray(msg.content)) invalid(`messages.${i}.content: Field required`);
    let resultsDone = false;
    msg.content.forEach((block: unknown, j: number) => {
      if (!isObject(block)) return invalid(`messages.${i}.content.${j}: Input should be a valid dictionary`);
      count(block);
      const at = `messages.${i}.content.${j}`;
      if (block.type === 'tool_result') {
        usesTools = true;
        if (resultsDone) invalid(`messages.${i}: \`tool_result\` blocks must come first in the content array`);
        checkToolId(block.tool_use_id, `${at}.tool_use_id`);
        arrayOf(block.content).forEach((inner, k) => {
          count(inner);
          if (isObject(inner) && inner.type === 'document') checkDocument(inner, `${at}.content.${k}`);
        });
      } else resultsDone = true;
      if (block.type === 'text' && (typeof block.text !== 'string' || block.text.trim() === '')) {
        invalid(`${at}: text content blocks must contain non-whitespace text`);
      } else if (block.type === 'image' && block.source?.type === 'base64' && !IMAGE_TYPES.has(block.source.media_type)) {
        invalid(`${at}.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`);
      } else if (block.type === 'image' && block.source?.type === 'file' && (typeof block.source.file_id !== 'string' || block.source.file_id === '')) {
        invalid(`${at}.source.file.file_id: Field required`);
      } else if (block.type === 'document') {
        if (msg.role !== 'user') invalid(`${at}: document blocks are only allowed in user messages`);
        checkDocument(block, at);
      } else if (block.type === 'tool_use') {
        usesTools = true;
        checkToolId(block.id, `${at}.id`);
      } else if (block.type === 'thinking' && (typeof block.thinking !== 'string' || block.signature !== thinkingSignature(block.thinking))) {
        invalid(`${at}: Invalid \`signature\` in \`thinking\` block`);
      }
    });
    checkToolPairing(b.messages, i);
  });
  if (breakpoints > MAX_CACHE_BREAKPOINTS) {
    invalid(`A maximum of ${MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found ${breakpoints}.`);
  }
  if (usesTools && !Array.isArray(b.tools)) invalid('Requests which include `tool_use` or `tool_result` blocks must define tools.');
  checkMessagesAnswerOptions(b);
}

/** Tool choice and JSON output, as the vendor checks them. */
function checkMessagesAnswerOptions(b: Record<string, any>): void {
  const choice = toolChoiceOf(b, 'messages');
  if (forcesCall(choice)) {
    if (b.thinking?.type === 'enabled' || b.thinking?.type === 'adaptive') invalid('Thinking may not be enabled when tool_choice forces tool use.');
    const names = toolDefinitions(b, 'messages').map((d) => d.name);
    if (names.length === 0) invalid('tool_choice: a tool choice of type `any` or `tool` requires tools.');
    if (choice.mode === 'named' && !names.includes(choice.name!)) invalid(`tool_choice.name: Tool '${choice.name}' not found in the request's tools.`);
  }
  const format = isObject(b.output_config) ? b.output_config.format : undefined;
  if (format !== undefined && format !== null) {
    if (!isObject(format) || format.type !== 'json_schema') invalid("output_config.format.type: Input should be 'json_schema'");
    if (!isObject((format as Record<string, any>).schema)) invalid('output_config.format.schema: Field required');
  }
}

/** A document block's source, as the vendor checks it: PDFs as base64 or URL, plain text, blocks, or an uploaded file. */
function checkDocument(block: Record<string, any>, at: string): void {
  const source = block.source;
  switch (source?.type) {
    case 'base64':
      if (source.media_type !== PDF_MEDIA_TYPE) invalid(`${at}.source.base64.media_type: Input should be 'application/pdf'`);
      if (typeof source.data !== 'string' || !Buffer.from(source.data, 'base64').subarray(0, 1024).includes('%PDF-')) invalid('The PDF specified was not valid.');
      break;
    case 'text':
      if (source.media_type !== TEXT_MEDIA_TYPE) invalid(`${at}.source.text.media_type: Input should be 'text/plain'`);
      if (typeof source.data !== 'string') invalid(`${at}.source.text.data: Input should be a valid string`);
      break;
    case 'url':
      if (typeof source.url !== 'string' || !/^https?:\/\//.test(source.url)) invalid(`${at}.source.url.url: Input should be a valid URL`);
      break;
    case 'content':
      if (typeof source.content !== 'string' && !Array.isArray(source.content)) invalid(`${at}.source.content.content: Field required`);
      break;
    case 'file':
      if (typeof source.file_id !== 'string' || source.file_id === '') invalid(`${at}.source.file.file_id: Field required`);
      break;
    default:
      invalid(`${at}.source: Input tag '${String(source?.type)}' found using 'type' does not match any of the expected tags: 'base64', 'content', 'file', 'text', 'url'`);
  }
}

function checkToolId(id: unknown, at: string): void {
  if (typeof id !== 'string' || !TOOL_ID.test(id)) invalid(`${at}: String should match pattern '^[a-zA-Z0-9_-]+$'`);
}

const blocksOf = (m: unknown, type: string): Record<string, any>[] =>
  isObject(m) ? arrayOf(m.content).filter((x): x is Record<string, any> => isObject(x) && x.type === type) : [];

/** A tool_use must be answered in the very next message, and a tool_result must answer the previous one. */
function checkToolPairing(messages: unknown[], i: number): void {
  const m = messages[i] as Record<string, any>;
  if (m.role === 'assistant' && i + 1 < messages.length) {
    const answered = new Set(blocksOf(messages[i + 1], 'tool_result').map((r) => r.tool_use_id));
    const missing = blocksOf(m, 'tool_use').filter((u) => !answered.has(u.id)).map((u) => u.id);
    if (missing.length > 0) {
      invalid(
        `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. ` +
          'Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
      );
    }
  }
  if (m.role === 'user') {
    const asked = new Set(i > 0 && (messages[i - 1] as any)?.role === 'assistant' ? blocksOf(messages[i - 1], 'tool_use').map((u) => u.id) : []);
    for (const r of blocksOf(m, 'tool_result')) {
      if (!asked.has(r.tool_use_id)) {
        invalid(
          `messages.${i}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${r.tool_use_id}. ` +
            'Each `tool_result` block must have a corresponding `tool_use` block in the previous message.',
        );
      }
    }
  }
}

const CHAT_ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'];

/** Chat-completions format. Throws a 400 GatewayError. */
export function validateChatRequest(b: Record<string, any>): void {
  if (typeof b.model !== 'string' || b.model === '') invalid('you must provide a model parameter', 'model');
  if (!Array.isArray(b.messages)) invalid("Missing required parameter: 'messages'.", 'messages');
  if (b.messages.length === 0) invalid("Invalid 'messages': empty array. Expected an array with minimum length 1.", 'messages');
  for (const key of ['max_tokens', 'max_completion_tokens']) {
    if (b[key] !== undefined && b[key] !== null && !(Number.isInteger(b[key]) && b[key] >= 1)) {
      invalid(`Invalid '${key}': integer below minimum value. Expected a value >= 1.`, key);
    }
  }
  if (b.temperature !== undefined && b.temperature !== null && !(typeof b.temperature === 'number' && b.temperature >= 0 && b.temperature <= 2)) {
    invalid("Invalid 'temperature': decimal above maximum value. Expected a value <= 2.", 'temperature');
  }
  if (b.stream_options != null && b.stream !== true) {
    invalid("The 'stream_options' parameter is only allowed when 'stream' is enabled.", 'stream_options');
  }

  const pending = new Set<string>();
  let pendingFrom = -1;
  b.messages.forEach((m: unknown, i: number) => {
    if (!isObject(m) || !CHAT_ROLES.includes(m.role)) {
      invalid(`Invalid value: '${isObject(m) ? m.role : m}'. Supported values are: ${CHAT_ROLES.map((r) => `'${r}'`).join(', ')}.`, `messages[${i}].role`);
    }
    const msg = m as Record<string, any>;
    if (msg.role === 'tool') {
      if (!pending.delete(msg.tool_call_id)) {
        invalid("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", `messages.[${i}].role`);
      }
      return;
    }
    if (pending.size > 0) unanswered(pending, pendingFrom);
    arrayOf(msg.content).forEach((part, k) => checkChatPart(part, msg.role, `messages[${i}].content[${k}]`));
    arrayOf(msg.tool_calls).forEach((call, k) => {
      if (!isObject(call) || typeof call.id !== 'string' || !isObject(call.function) || typeof call.function.name !== 'string') {
        invalid(`Missing required parameter: 'messages[${i}].tool_calls[${k}]'.`, `messages[${i}].tool_calls[${k}]`);
      }
      if (typeof (call as any).function.arguments !== 'string') {
        invalid(`Invalid type for 'messages[${i}].tool_calls[${k}].function.arguments': expected a string.`, `messages[${i}].tool_calls[${k}].function.arguments`);
      }
      pending.add((call as any).id);
      pendingFrom = i;
    });
    arrayOf(msg.reasoning_details).forEach((d, k) => {
      if (isObject(d) && d.type === 'thinking' && d.signature !== undefined && (typeof d.thinking !== 'string' || d.signature !== thinkingSignature(d.thinking))) {
        invalid('Invalid signature in thinking block.', `messages[${i}].reasoning_details[${k}].signature`);
      }
    });
  });
  if (pending.size > 0) unanswered(pending, pendingFrom);
  checkChatAnswerOptions(b);
}

/** Tool choice and JSON output, as the vendor checks them. */
function checkChatAnswerOptions(b: Record<string, any>): void {
  const defs = toolDefinitions(b, 'chat');
  if (b.tool_choice !== undefined && b.tool_choice !== null && !(Array.isArray(b.tools) && b.tools.length > 0)) {
    invalid("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", 'tool_choice');
  }
  const choice = toolChoiceOf(b, 'chat');
  if (choice.mode === 'named' && !defs.some((d) => d.name === choice.name)) {
    invalid(`Invalid value for 'tool_choice': no function named '${choice.name}' in 'tools'.`, 'tool_choice');
  }
  arrayOf(b.tools).forEach((tool, i) => {
    const fn = isObject(tool) && isObject(tool.function) ? tool.function : undefined;
    const problem = fn?.strict === true ? strictSchemaProblem(fn.parameters ?? {}) : undefined;
    if (problem) invalid(`Invalid schema for function '${fn!.name}': ${problem}`, `tools[${i}].function.parameters`);
  });
  const output = outputFormatOf(b, 'chat');
  if (output?.type === 'json_object' && !arrayOf(b.messages).some((m) => isObject(m) && textsOf(m.content).some((text) => /json/i.test(text)))) {
    invalid("'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.", 'messages');
  }
  if (output?.type === 'json_schema') {
    if (!isObject(output.schema)) invalid("Invalid type for 'response_format.json_schema.schema': expected an object.", 'response_format.json_schema.schema');
    const problem = output.strict ? strictSchemaProblem(output.schema) : undefined;
    if (problem) invalid(`Invalid schema for response_format '${output.name}': ${problem}`, 'response_format');
  }
}

/** The text of a chat message's content (a string, or its text parts). */
const textsOf = (content: unknown): string[] =>
  typeof content === 'string' ? [content] : arrayOf(content).flatMap((p) => (isObject(p) && typeof p.text === 'string' ? [p.text] : []));

const MAX_STRICT_NODES = 10_000;

/**
 * What OpenAI's strict mode refuses: a root that is not an object, and an object schema that does
 * not list every property as required or leaves additionalProperties open. Bounded walk.
 */
function strictSchemaProblem(root: unknown): string | undefined {
  if (!isObject(root) || (root.type !== 'object' && root.$ref === undefined)) return `schema must be a JSON Schema of 'type: "object"', got 'type: "${isObject(root) ? root.type : typeof root}"'.`;
  let nodes = 0;
  const walk = (node: unknown, path: string[]): string | undefined => {
    if (!isObject(node) || ++nodes > MAX_STRICT_NODES || path.length > 64) return undefined;
    const context = `In context=(${path.map((p) => `'${p}'`).join(', ')}${path.length === 1 ? ',' : ''})`;
    const types = Array.isArray(node.type) ? node.type : [node.type];
    if (types.includes('object') || isObject(node.properties)) {
      if (node.additionalProperties !== false) return `${context}, 'additionalProperties' is required to be supplied and to be false.`;
      const required = arrayOf(node.required);
      const missing = Object.keys(isObject(node.properties) ? node.properties : {}).find((key) => !required.includes(key));
      if (missing !== undefined) return `${context}, 'required' is required to be supplied and to be an array including every key in properties. Missing '${missing}'.`;
    }
    const children: [unknown, string[]][] = [];
    for (const key of ['properties', '$defs', 'definitions']) {
      if (isObject(node[key])) for (const [name, child] of Object.entries(node[key])) children.push([child, [...path, key, name]]);
    }
    for (const key of ['anyOf', 'allOf', 'prefixItems']) arrayOf(node[key]).forEach((child, i) => children.push([child, [...path, key, String(i)]]));
    if (isObject(node.items)) children.push([node.items, [...path, 'items']]);
    for (const [child, at] of children) {
      const problem = walk(child, at);
      if (problem) return problem;
    }
    return undefined;
  };
  return walk(root, []);
}

/** Images and files go in user messages only; a file is an uploaded file's id, or its data (a base64 data URL) with a file name. */
function checkChatPart(part: unknown, role: string, at: string): void {
  if (!isObject(part) || (part.type !== 'file' && part.type !== 'image_url')) return;
  if (role !== 'user') invalid(`Invalid value: '${part.type}'. Supported values are: 'text'${role === 'assistant' ? " and 'refusal'" : ''}.`, `${at}.type`);
  if (part.type !== 'file') return;
  const file = part.file;
  if (!isObject(file)) invalid(`Missing required parameter: '${at}.file'.`, `${at}.file`);
  if (typeof file.file_id === 'string') return;
  if (typeof file.file_data !== 'string' || typeof file.filename !== 'string') invalid(`Missing required parameter: '${at}.file.file_id'.`, `${at}.file.file_id`);
  const url = parseDataUrl(file.file_data);
  if (!url?.base64) invalid(`Invalid '${at}.file.file_data': expected a base64-encoded data URL.`, `${at}.file.file_data`);
  if (url!.mediaType === PDF_MEDIA_TYPE && !dataUrlBytes(file.file_data)!.subarray(0, 1024).includes('%PDF-')) {
    invalid(`Invalid '${at}.file.file_data': the file is not a valid PDF.`, `${at}.file.file_data`);
  }
}

function unanswered(pending: Set<string>, at: number): never {
  return invalid(
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
      `The following tool_call_ids did not have response messages: ${[...pending].join(', ')}`,
    `messages.[${at}].role`,
  );
}
