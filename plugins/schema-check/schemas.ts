// Request body schemas (JSON Schema 2020-12, spec sections 2.2, 2.3, 4 and 8): the single source for
// both validation (validate.ts) and the OpenAPI description (openapi.ts).
// Conventions that keep ajv's errors specific (see problems.ts):
// - alternatives of different JSON types use a type list (`type: ['string', 'array']` + `items`), not anyOf;
// - tagged unions use `discriminator`, so only the branch named by the tag reports errors, and an
//   `enum` on the tag lists what is allowed;
// - the few anyOf that remain have inline branches (error pruning reads their schema paths);
// - a `description` on a const/enum is appended to its error as the hint of what is allowed.
// Objects accept unknown members (vendors add fields every few months, and a gateway that refuses
// them breaks every new client release): forwarded to a same-format upstream, dropped by format
// conversion, which builds its own objects. What stays strict: the fields the chat parser rejects
// (spec section 4 rule 5, `rejected`), the tags that say which kinds are supported (function tools
// only, the known content part and block types), and cache_control, whose members set the price
// (a member the gateway does not know could change what the upstream bills for the write).

export type Schema = Record<string, unknown>;

/** 2^53 − 1, the spec's upper bound for token counts. */
const MAX_TOKENS = Number.MAX_SAFE_INTEGER;

const ref = (name: string): Schema => ({ $ref: `#/$defs/${name}` });
const string: Schema = { type: 'string' };
const nonEmptyString: Schema = { type: 'string', minLength: 1 };
const boolean: Schema = { type: 'boolean' };
const anyObject: Schema = { type: 'object' };
const tokenCount: Schema = { type: 'integer', exclusiveMinimum: 0, maximum: MAX_TOKENS };
const fraction: Schema = { type: 'number', minimum: 0, maximum: 1 };
/** A field the chat-completions parser rejects whatever its value (spec section 4 rule 5). */
const rejected: Schema = { not: {}, description: 'Not supported: rejected when present.' };

function object(properties: Record<string, Schema>, required: string[], open: boolean): Schema {
  const schema: Schema = { type: 'object', properties };
  if (required.length > 0) schema.required = required;
  if (!open) schema.additionalProperties = false;
  return schema;
}

/** Variants told apart by `tag`; each variant schema names its tag value(s) in `properties[tag]`. */
function tagged(tag: string, variants: string[]): Schema {
  const tags = variants.flatMap((name) => {
    const tagSchema = (defs[name].properties as Record<string, Schema>)[tag];
    return (tagSchema.enum as string[] | undefined) ?? [tagSchema.const as string];
  });
  return {
    type: 'object',
    required: [tag],
    properties: { [tag]: { enum: tags } },
    discriminator: { propertyName: tag },
    oneOf: variants.map(ref),
  };
}

/** A text part or block whose tag error explains that only text is allowed where it is used. */
function textOnly(name: string, hint: string): Schema {
  const base = defs[name];
  const properties = base.properties as Record<string, Schema>;
  return { ...base, properties: { ...properties, type: { ...properties.type, description: hint } } };
}

const defs: Record<string, Schema> = {};

defs.CacheControl = {
  type: ['object', 'null'],
  required: ['type'],
  properties: { type: { const: 'ephemeral' }, ttl: { enum: ['5m', '1h'] } },
  additionalProperties: false,
};

// --- Chat completions (spec 2.2) ---

defs.ChatTextPart = object({ type: { const: 'text' }, text: string, cache_control: ref('CacheControl') }, ['type', 'text'], true);
defs.ChatImagePart = object(
  {
    type: { const: 'image_url' },
    image_url: object({ url: nonEmptyString, detail: { enum: ['auto', 'low', 'high'] } }, ['url'], true),
  },
  ['type', 'image_url'],
  true,
);
/** A file (a PDF, as openai's ChatCompletionContentPart.File): its data as a data URL, or the vendor's id of an uploaded file. */
defs.ChatFilePart = object(
  {
    type: { const: 'file' },
    file: {
      ...object({ file_data: nonEmptyString, file_id: nonEmptyString, filename: string }, [], true),
      anyOf: [{ required: ['file_data'] }, { required: ['file_id'] }],
    },
  },
  ['type', 'file'],
  true,
);
defs.ChatContentPart = tagged('type', ['ChatTextPart', 'ChatImagePart', 'ChatFilePart']);
defs.ChatInstructionTextPart = textOnly('ChatTextPart', 'System and developer messages take text parts only.');

defs.ChatToolCall = object(
  {
    id: nonEmptyString,
    type: { const: 'function' },
    function: object({ name: nonEmptyString, arguments: string }, ['name', 'arguments'], true),
  },
  ['id', 'type', 'function'],
  true,
);
defs.ChatThinkingDetail = object({ type: { const: 'thinking' }, thinking: string, signature: string }, ['type', 'thinking'], true);
defs.ChatRedactedThinkingDetail = object({ type: { const: 'redacted_thinking' }, data: string }, ['type', 'data'], true);
defs.ChatReasoningDetail = tagged('type', ['ChatThinkingDetail', 'ChatRedactedThinkingDetail']);

/** Members every chat message may carry; `content` differs by role. */
function chatMessage(roles: string[], contentPart: string): Schema {
  return object(
    {
      role: { enum: roles },
      content: { type: ['string', 'array', 'null'], items: ref(contentPart) },
      tool_call_id: string,
      tool_calls: { type: 'array', items: ref('ChatToolCall') },
      function_call: object({ name: nonEmptyString, arguments: string }, ['name', 'arguments'], true),
      reasoning_content: { type: ['string', 'null'] },
      reasoning_details: { type: 'array', items: ref('ChatReasoningDetail') },
      audio: rejected,
    },
    ['role'],
    true,
  );
}
defs.ChatInstructionMessage = chatMessage(['system', 'developer'], 'ChatInstructionTextPart');
defs.ChatTurnMessage = chatMessage(['user', 'assistant', 'tool'], 'ChatContentPart');
defs.ChatMessage = tagged('role', ['ChatInstructionMessage', 'ChatTurnMessage']);

defs.ChatTool = object(
  {
    type: { const: 'function', description: 'Only function tools are supported.' },
    function: object(
      { name: nonEmptyString, description: string, parameters: { type: 'object', default: {} }, strict: boolean },
      ['name'],
      true,
    ),
  },
  ['type', 'function'],
  true,
);
defs.ChatToolChoice = {
  anyOf: [
    { type: 'string', enum: ['auto', 'none', 'required'] },
    object({ type: { const: 'function' }, function: object({ name: nonEmptyString }, ['name'], true) }, ['type', 'function'], true),
  ],
};

defs.TextResponseFormat = object({ type: { const: 'text' } }, ['type'], true);
defs.JsonObjectResponseFormat = object({ type: { const: 'json_object' } }, ['type'], true);
defs.JsonSchemaResponseFormat = object(
  {
    type: { const: 'json_schema' },
    json_schema: object({ name: nonEmptyString, description: string, schema: anyObject, strict: boolean }, ['name', 'schema'], true),
  },
  ['type', 'json_schema'],
  true,
);
defs.ChatResponseFormat = tagged('type', ['TextResponseFormat', 'JsonObjectResponseFormat', 'JsonSchemaResponseFormat']);

const chatRequest = object(
  {
    model: nonEmptyString,
    messages: { type: 'array', minItems: 1, items: ref('ChatMessage') },
    max_tokens: tokenCount,
    max_completion_tokens: { ...tokenCount, description: 'Wins over max_tokens when both are given.' },
    temperature: { type: 'number', minimum: 0, maximum: 2 },
    top_p: fraction,
    stop: { type: ['string', 'array', 'null'], items: string },
    stream: boolean,
    stream_options: { type: ['object', 'null'], properties: { include_usage: boolean, include_obfuscation: boolean } },
    tools: { type: 'array', items: ref('ChatTool') },
    tool_choice: ref('ChatToolChoice'),
    parallel_tool_calls: boolean,
    response_format: ref('ChatResponseFormat'),
    reasoning_effort: { enum: ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] },
    user: string,
    n: { const: 1, description: 'Only one choice per request is supported.' },
    modalities: { type: 'array', items: { const: 'text', description: 'Only text output is supported.' } },
    logprobs: rejected,
    top_logprobs: rejected,
    logit_bias: rejected,
    audio: rejected,
  },
  ['model', 'messages'],
  true,
);

// --- Messages (spec 2.3) ---

defs.TextBlock = object({ type: { const: 'text' }, text: string, cache_control: ref('CacheControl') }, ['type', 'text'], true);
// Sources of images and documents. The media types the vendor takes are its to check: it adds some now and then.
defs.Base64Source = object({ type: { const: 'base64' }, media_type: nonEmptyString, data: string }, ['type', 'media_type', 'data'], true);
defs.UrlSource = object({ type: { const: 'url' }, url: nonEmptyString }, ['type', 'url'], true);
/** A file uploaded to the vendor beforehand (its Files API), named by the vendor's id. */
defs.FileSource = object({ type: { const: 'file' }, file_id: nonEmptyString }, ['type', 'file_id'], true);
defs.PlainTextSource = object({ type: { const: 'text' }, media_type: nonEmptyString, data: string }, ['type', 'media_type', 'data'], true);
defs.ImageSource = tagged('type', ['Base64Source', 'UrlSource', 'FileSource']);
defs.ImageBlock = object({ type: { const: 'image' }, source: ref('ImageSource') }, ['type', 'source'], true);
/** A document made of text and image blocks (citable block by block). */
defs.ContentSource = object(
  { type: { const: 'content' }, content: { type: ['string', 'array'], items: ref('DocumentContentBlock') } },
  ['type', 'content'],
  true,
);
defs.DocumentContentBlock = tagged('type', ['TextBlock', 'ImageBlock']);
defs.DocumentSource = tagged('type', ['Base64Source', 'PlainTextSource', 'UrlSource', 'ContentSource', 'FileSource']);
defs.DocumentBlock = object(
  {
    type: { const: 'document' },
    source: ref('DocumentSource'),
    title: { type: ['string', 'null'] },
    context: { type: ['string', 'null'] },
    citations: { type: ['object', 'null'] },
    cache_control: ref('CacheControl'),
  },
  ['type', 'source'],
  true,
);
defs.ToolUseBlock = object({ type: { const: 'tool_use' }, id: nonEmptyString, name: nonEmptyString, input: {} }, ['type', 'id', 'name', 'input'], true);
defs.ToolResultBlock = object(
  {
    type: { const: 'tool_result' },
    tool_use_id: nonEmptyString,
    content: { type: ['string', 'array'], items: ref('ContentBlock') },
    is_error: boolean,
  },
  ['type', 'tool_use_id'],
  true,
);
defs.ThinkingBlock = object({ type: { const: 'thinking' }, thinking: string, signature: string }, ['type', 'thinking'], true);
defs.RedactedThinkingBlock = object({ type: { const: 'redacted_thinking' }, data: string }, ['type', 'data'], true);
defs.ContentBlock = tagged(
  'type',
  ['TextBlock', 'ImageBlock', 'DocumentBlock', 'ToolUseBlock', 'ToolResultBlock', 'ThinkingBlock', 'RedactedThinkingBlock'],
);
defs.SystemTextBlock = textOnly('TextBlock', 'System content takes text blocks only.');

defs.ConversationMessage = object(
  { role: { enum: ['user', 'assistant'] }, content: { type: ['string', 'array'], items: ref('ContentBlock') } },
  ['role', 'content'],
  true,
);
defs.SystemMessage = object(
  {
    role: { const: 'system' },
    content: { type: ['string', 'array'], items: ref('SystemTextBlock') },
    clear_at: { enum: ['never', 'next_user_message'] },
    output_config: object({ effort: { enum: ['low', 'medium', 'high', 'xhigh', 'max'] } }, ['effort'], true),
  },
  ['role', 'content'],
  true,
);
defs.Message = tagged('role', ['ConversationMessage', 'SystemMessage']);

defs.Tool = object(
  {
    // A client tool: server tools (web search and the like) have other types and are not supported.
    type: { enum: ['custom', null], description: 'Only client tools (type custom) are supported.' },
    name: nonEmptyString,
    description: string,
    input_schema: anyObject,
    strict: boolean,
    cache_control: { type: ['object', 'null'] },
  },
  ['name'],
  true,
);

// Message threads (a beta): the gateway holds none; see thread.ts for how each kind is answered.
defs.ThreadCreate = object({ type: { const: 'create' } }, ['type'], true);
defs.ThreadContinue = object({ type: { const: 'continue' }, previous_message_id: nonEmptyString }, ['type', 'previous_message_id'], true);

const countTokensProperties: Record<string, Schema> = {
  model: nonEmptyString,
  system: { type: ['string', 'array'], items: ref('SystemTextBlock') },
  messages: { type: 'array', minItems: 1, items: ref('Message') },
  temperature: fraction,
  top_p: fraction,
  top_k: { type: 'integer', minimum: 0, maximum: MAX_TOKENS },
  stop_sequences: { type: 'array', items: string },
  stream: boolean,
  tools: { type: 'array', items: ref('Tool') },
  tool_choice: anyObject,
  thinking: anyObject,
  output_config: anyObject,
  metadata: anyObject,
};
/** count_tokens takes the messages body without max_tokens (its output budget is one token). */
const countTokensRequest = object(countTokensProperties, ['model', 'messages'], true);
const messagesRequest = object(
  { ...countTokensProperties, max_tokens: tokenCount, thread: { ...tagged('type', ['ThreadCreate', 'ThreadContinue']), type: ['object', 'null'] } },
  ['model', 'messages', 'max_tokens'],
  true,
);

export type BodyRoute = 'chat' | 'messages' | 'count_tokens';

/** Shared definitions, referenced as `#/$defs/<name>`. */
export const schemaDefs: Readonly<Record<string, Schema>> = defs;

/** The request body schema of each POST route, with its component name in the OpenAPI description. */
export const requestSchemas: Readonly<Record<BodyRoute, { name: string; schema: Schema }>> = {
  chat: { name: 'ChatCompletionsRequest', schema: chatRequest },
  messages: { name: 'MessagesRequest', schema: messagesRequest },
  count_tokens: { name: 'CountTokensRequest', schema: countTokensRequest },
};
