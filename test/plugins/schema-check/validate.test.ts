// Tables of valid and invalid bodies per route (spec 2.2, 2.3, 4 rules 1–6, 8), run through onRequest.
import t, { type Test } from 'tap';
import type { Route } from '../../../lib/context.js';
import { fakeCtx, check } from './fake-ctx.js';

type Body = Record<string, unknown>;
interface Invalid {
  name: string;
  body: Body;
  /** The field named first, in `param` and at the start of the message. */
  param: string;
  message: RegExp;
  code?: string;
}

const user = { role: 'user', content: 'Hello' };
const chat = (extra: Body = {}): Body => ({ model: 'm', messages: [user], ...extra });
const chatWith = (...messages: unknown[]): Body => ({ model: 'm', messages });
const withPart = (part: unknown, role = 'user'): Body => chatWith({ role, content: [part] });
const messages = (extra: Body = {}): Body => ({ model: 'm', max_tokens: 64, messages: [user], ...extra });
const messagesWith = (...list: unknown[]): Body => ({ model: 'm', max_tokens: 64, messages: list });
const withBlock = (block: unknown, role = 'user'): Body => messagesWith({ role, content: [block] });
const png = { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' };

const validChat: [string, Body][] = [
  ['minimal', chat()],
  ['every documented field', chat({
    max_tokens: 100,
    max_completion_tokens: 9007199254740991,
    temperature: 2,
    top_p: 0,
    stop: ['END'],
    stream: true,
    stream_options: { include_usage: true },
    tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object' }, strict: true } }],
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
    parallel_tool_calls: false,
    response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' }, strict: true } },
    reasoning_effort: 'xhigh',
    user: 'u-1',
    n: 1,
    modalities: ['text'],
  })],
  ['stop as a string, stream_options null', chat({ stop: 'END', stream_options: null })],
  ['stream_options.include_obfuscation (an SDK field)', chat({ stream: true, stream_options: { include_usage: true, include_obfuscation: false } })],
  ['stop null', chat({ stop: null })],
  ['tool_choice strings', chat({ tool_choice: 'required' })],
  ['response_format text and json_object', chat({ response_format: { type: 'json_object' } })],
  ['a tool with only a name', chat({ tools: [{ type: 'function', function: { name: 'f' } }] })],
  ['unknown top-level, message and part fields', {
    ...chatWith({ role: 'user', name: 'ann', content: [{ type: 'text', text: 'hi', annotations: [] }] }),
    seed: 7,
    metadata: { a: 'b' },
  }],
  ['every role and message field', chatWith(
    { role: 'system', content: 'Be brief.' },
    { role: 'developer', content: [{ type: 'text', text: 'Rules', cache_control: { type: 'ephemeral', ttl: '1h' } }] },
    { role: 'user', content: [
      { type: 'text', text: 'Look', cache_control: null },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'low' } },
    ] },
    {
      role: 'assistant',
      content: null,
      reasoning_content: 'thinking...',
      reasoning_details: [
        { type: 'thinking', thinking: 'hmm', signature: 'sig' },
        { type: 'redacted_thinking', data: 'opaque' },
      ],
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }],
    },
    { role: 'tool', tool_call_id: 'call_1', content: '42' },
    { role: 'assistant', content: 'ok', function_call: { name: 'f', arguments: '' }, reasoning_content: null },
  )],
  ['cache_control ttl 5m', withPart({ type: 'text', text: 'a', cache_control: { type: 'ephemeral', ttl: '5m' } })],
  // Vendors add fields to nested objects every few months: accepted (forwarded same-format, dropped by conversion).
  ['members the gateway does not know, in nested objects', chat({
    stream: true,
    stream_options: { include_usage: true, some_future_option: 1 },
    tools: [{ type: 'function', function: { name: 'f', strict: true, some_future_field: { a: 1 } }, some_future_field: true }],
    tool_choice: { type: 'function', function: { name: 'f', extra: 1 }, extra: 1 },
    response_format: { type: 'json_schema', json_schema: { name: 'a', schema: { type: 'object' }, description: 'An answer' } },
    messages: [
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/a.png', some_future_field: 1 } }] },
      {
        role: 'assistant',
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}', extra: 1 }, extra: 1 }],
        reasoning_details: [{ type: 'thinking', thinking: 'h', signature: 's', format: 'anthropic-claude-v1', index: 0 }],
      },
      { role: 'tool', tool_call_id: 'c', content: 'ok' },
    ],
  })],
  ['file parts: data with a name, an uploaded file id', withPart({ type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } })],
  ['a file part given by id', withPart({ type: 'file', file: { file_id: 'file-abc' } })],
];

const invalidChat: Invalid[] = [
  { name: 'model missing', body: { messages: [user] }, param: 'model', message: /is required/, code: 'missing_required_parameter' },
  { name: 'model empty', body: chat({ model: '' }), param: 'model', message: /must be a non-empty string/ },
  { name: 'model not a string', body: chat({ model: 7 }), param: 'model', message: /must be a string \(got an integer\)/, code: 'invalid_type' },
  { name: 'messages missing', body: { model: 'm' }, param: 'messages', message: /is required/ },
  { name: 'messages empty', body: chat({ messages: [] }), param: 'messages', message: /at least 1 item/ },
  { name: 'messages not an array', body: chat({ messages: 'hi' }), param: 'messages', message: /must be an array/ },
  { name: 'max_tokens 0', body: chat({ max_tokens: 0 }), param: 'max_tokens', message: /greater than 0 \(got 0\)/, code: 'invalid_value' },
  { name: 'max_tokens fractional', body: chat({ max_tokens: 1.5 }), param: 'max_tokens', message: /must be an integer/ },
  { name: 'max_tokens above 2^53-1', body: chat({ max_tokens: 9007199254740992 }), param: 'max_tokens', message: /at most 9007199254740991/ },
  { name: 'max_completion_tokens negative', body: chat({ max_completion_tokens: -1 }), param: 'max_completion_tokens', message: /greater than 0/ },
  { name: 'temperature above 2', body: chat({ temperature: 2.5 }), param: 'temperature', message: /at most 2 \(got 2\.5\)/ },
  { name: 'temperature below 0', body: chat({ temperature: -0.1 }), param: 'temperature', message: /at least 0/ },
  { name: 'top_p above 1', body: chat({ top_p: 1.1 }), param: 'top_p', message: /at most 1/ },
  { name: 'stop a number', body: chat({ stop: 5 }), param: 'stop', message: /must be a string, an array or null/ },
  { name: 'stop with a number item', body: chat({ stop: ['a', 1] }), param: 'stop[1]', message: /must be a string/ },
  { name: 'stream a string', body: chat({ stream: 'yes' }), param: 'stream', message: /must be a boolean/ },
  { name: 'stream_options.include_usage a string', body: chat({ stream_options: { include_usage: 'yes' } }), param: 'stream_options.include_usage', message: /boolean/ },
  { name: 'tool not a function tool', body: chat({ tools: [{ type: 'code_interpreter' }] }), param: 'tools[0].type', message: /must be "function" \(got "code_interpreter"\): only function tools are supported/ },
  { name: 'tool without a name', body: chat({ tools: [{ type: 'function', function: { name: '' } }] }), param: 'tools[0].function.name', message: /non-empty string/ },
  { name: 'tool parameters not an object', body: chat({ tools: [{ type: 'function', function: { name: 'f', parameters: [] } }] }), param: 'tools[0].function.parameters', message: /must be an object/ },
  { name: 'tool_choice unknown string', body: chat({ tool_choice: 'any' }), param: 'tool_choice', message: /one of "auto", "none" or "required" \(got "any"\)/ },
  { name: 'tool_choice a number', body: chat({ tool_choice: 3 }), param: 'tool_choice', message: /must be a string or an object/ },
  { name: 'tool_choice object without a name', body: chat({ tool_choice: { type: 'function', function: {} } }), param: 'tool_choice.function.name', message: /is required/ },
  { name: 'parallel_tool_calls a string', body: chat({ parallel_tool_calls: 'no' }), param: 'parallel_tool_calls', message: /boolean/ },
  { name: 'response_format unknown type', body: chat({ response_format: { type: 'xml' } }), param: 'response_format.type', message: /one of "text", "json_object" or "json_schema"/ },
  { name: 'json_schema without a name', body: chat({ response_format: { type: 'json_schema', json_schema: { schema: {} } } }), param: 'response_format.json_schema.name', message: /is required/ },
  { name: 'json_schema without a schema', body: chat({ response_format: { type: 'json_schema', json_schema: { name: 'a' } } }), param: 'response_format.json_schema.schema', message: /is required/ },
  { name: 'reasoning_effort unknown', body: chat({ reasoning_effort: 'extreme' }), param: 'reasoning_effort', message: /"none", "minimal", "low", "medium", "high", "xhigh" or "max"/ },
  { name: 'user a number', body: chat({ user: 5 }), param: 'user', message: /must be a string/ },
  // Rule 5: what the chat-completions parser rejects.
  { name: 'n 2', body: chat({ n: 2 }), param: 'n', message: /must be 1 \(got 2\): only one choice per request is supported/ },
  { name: 'modalities with audio', body: chat({ modalities: ['text', 'audio'] }), param: 'modalities[1]', message: /must be "text" \(got "audio"\): only text output is supported/ },
  { name: 'logprobs', body: chat({ logprobs: true }), param: 'logprobs', message: /is not supported/, code: 'unsupported_parameter' },
  { name: 'logprobs false', body: chat({ logprobs: false }), param: 'logprobs', message: /is not supported/ },
  { name: 'top_logprobs', body: chat({ top_logprobs: 2 }), param: 'top_logprobs', message: /is not supported/ },
  { name: 'logit_bias', body: chat({ logit_bias: { '50256': -100 } }), param: 'logit_bias', message: /is not supported/ },
  { name: 'top-level audio', body: chat({ audio: { voice: 'alloy', format: 'wav' } }), param: 'audio', message: /is not supported/ },
  { name: 'message-level audio', body: chatWith({ role: 'assistant', audio: { id: 'a1' } }), param: 'messages[0].audio', message: /is not supported/ },
  { name: 'input_audio part', body: withPart({ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }), param: 'messages[0].content[0].type', message: /must be one of "text", "image_url" or "file" \(got "input_audio"\)/ },
  { name: 'file part without data or id', body: withPart({ type: 'file', file: { filename: 'a.pdf' } }), param: 'messages[0].content[0].file', message: /^messages\[0\]\.content\[0\]\.file: must have file_data or file_id\.$/, code: 'missing_required_parameter' },
  { name: 'file part without file', body: withPart({ type: 'file' }), param: 'messages[0].content[0].file', message: /is required/ },
  { name: 'file part with empty data', body: withPart({ type: 'file', file: { file_data: '' } }), param: 'messages[0].content[0].file.file_data', message: /non-empty/ },
  { name: 'file in a system message', body: withPart({ type: 'file', file: { file_id: 'f' } }, 'system'), param: 'messages[0].content[0].type', message: /system and developer messages take text parts only/ },
  { name: 'image in a system message', body: withPart({ type: 'image_url', image_url: { url: 'http://x/a.png' } }, 'system'), param: 'messages[0].content[0].type', message: /must be "text" \(got "image_url"\): system and developer messages take text parts only/ },
  { name: 'image in a developer message', body: withPart({ type: 'image_url', image_url: { url: 'http://x/a.png' } }, 'developer'), param: 'messages[0].content[0].type', message: /system and developer messages take text parts only/ },
  // Messages, parts and their members.
  { name: 'unknown role', body: chatWith({ role: 'bot', content: 'x' }), param: 'messages[0].role', message: /"system", "developer", "user", "assistant" or "tool" \(got "bot"\)/ },
  { name: 'role missing', body: chatWith({ content: 'x' }), param: 'messages[0].role', message: /is required/ },
  { name: 'content a number', body: chatWith({ role: 'user', content: 5 }), param: 'messages[0].content', message: /a string, an array or null/ },
  { name: 'empty image url', body: chatWith(user, user, { role: 'user', content: [{ type: 'image_url', image_url: { url: '' } }] }), param: 'messages[2].content[0].image_url.url', message: /^messages\[2\]\.content\[0\]\.image_url\.url: must be a non-empty string\.$/ },
  { name: 'image detail unknown', body: withPart({ type: 'image_url', image_url: { url: 'u', detail: 'ultra' } }), param: 'messages[0].content[0].image_url.detail', message: /"auto", "low" or "high"/ },
  { name: 'image_url missing', body: withPart({ type: 'image_url' }), param: 'messages[0].content[0].image_url', message: /is required/ },
  { name: 'cache_control unknown member (it sets the price)', body: withPart({ type: 'text', text: 'a', cache_control: { type: 'ephemeral', scope: 'global' } }), param: 'messages[0].content[0].cache_control.scope', message: /not a known field here \(allowed: type, ttl\)/, code: 'unknown_parameter' },
  { name: 'text part without text', body: withPart({ type: 'text' }), param: 'messages[0].content[0].text', message: /is required/ },
  { name: 'part without a type', body: withPart({ text: 'a' }), param: 'messages[0].content[0].type', message: /is required/ },
  { name: 'cache_control ttl 2h', body: withPart({ type: 'text', text: 'a', cache_control: { type: 'ephemeral', ttl: '2h' } }), param: 'messages[0].content[0].cache_control.ttl', message: /"5m" or "1h" \(got "2h"\)/ },
  { name: 'cache_control type unknown', body: withPart({ type: 'text', text: 'a', cache_control: { type: 'persistent' } }), param: 'messages[0].content[0].cache_control.type', message: /must be "ephemeral"/ },
  { name: 'tool call without an id', body: chatWith({ role: 'assistant', tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{}' } }] }), param: 'messages[0].tool_calls[0].id', message: /is required/ },
  { name: 'tool call of another type', body: chatWith({ role: 'assistant', tool_calls: [{ id: 'c', type: 'custom', function: { name: 'f', arguments: '{}' } }] }), param: 'messages[0].tool_calls[0].type', message: /must be "function"/ },
  { name: 'tool call without arguments', body: chatWith({ role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f' } }] }), param: 'messages[0].tool_calls[0].function.arguments', message: /is required/ },
  { name: 'function_call without a name', body: chatWith({ role: 'assistant', function_call: { arguments: '' } }), param: 'messages[0].function_call.name', message: /is required/ },
  { name: 'reasoning_content a number', body: chatWith({ role: 'assistant', reasoning_content: 1 }), param: 'messages[0].reasoning_content', message: /a string or null/ },
  { name: 'reasoning detail unknown type', body: chatWith({ role: 'assistant', reasoning_details: [{ type: 'summary' }] }), param: 'messages[0].reasoning_details[0].type', message: /"thinking" or "redacted_thinking"/ },
  { name: 'thinking detail without thinking', body: chatWith({ role: 'assistant', reasoning_details: [{ type: 'thinking', signature: 's' }] }), param: 'messages[0].reasoning_details[0].thinking', message: /is required/ },
];

const validMessages: [string, Body][] = [
  ['minimal', messages()],
  ['every documented field', messages({
    max_tokens: 9007199254740991,
    system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral', ttl: '1h' } }],
    temperature: 1,
    top_p: 1,
    top_k: 0,
    stop_sequences: ['END'],
    stream: true,
    tools: [{ name: 'get_weather', description: 'Weather', input_schema: { type: 'object' }, strict: true, cache_control: { type: 'ephemeral' } }],
    tool_choice: { type: 'tool', name: 'get_weather' },
    thinking: { type: 'enabled', budget_tokens: 1024 },
    output_config: { effort: 'high' },
    metadata: { user_id: 'u-1' },
    service_tier: 'auto',
  })],
  ['system as a string', messages({ system: 'Be brief.' })],
  ['every block and role', messagesWith(
    { role: 'system', content: 'Rules', clear_at: 'next_user_message', output_config: { effort: 'max' } },
    { role: 'user', content: [
      { type: 'text', text: 'Look', cache_control: null, citations: [] },
      { type: 'image', source: png },
      { type: 'image', source: { type: 'url', url: 'https://x/a.png' } },
    ] },
    { role: 'assistant', content: [
      { type: 'thinking', thinking: 'hmm', signature: 'sig' },
      { type: 'redacted_thinking', data: 'opaque' },
      { type: 'tool_use', id: 'toolu_1', name: 'f', input: {} },
    ] },
    { role: 'user', content: [
      { type: 'tool_result', tool_use_id: 'toolu_1', content: '42', is_error: false },
      { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: '42' }, { type: 'image', source: png }] },
      { type: 'tool_result', tool_use_id: 'toolu_1' },
    ] },
    { role: 'system', content: [{ type: 'text', text: 'more rules' }], note: 'unknown members are accepted' },
  )],
  ['tool_use input of any type', withBlock({ type: 'tool_use', id: 'a', name: 'f', input: null }, 'assistant')],
  ['client tools typed custom or null (as SDKs send them)', messages({
    tools: [{ type: 'custom', name: 'f', input_schema: { type: 'object' } }, { type: null, name: 'g', input_schema: { type: 'object' } }],
  })],
  // @ai-sdk/anthropic sends eager_input_streaming on every tool; defer_loading and input_examples are SDK fields too.
  ['tool fields the gateway does not know', messages({
    tools: [{ name: 'f', input_schema: { type: 'object' }, eager_input_streaming: true, defer_loading: false, input_examples: [{ city: 'Paris' }], allowed_callers: ['direct'] }],
  })],
  ['documents of every source, in messages and tool results', messagesWith({ role: 'user', content: [
    { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' }, title: 'A', context: 'B', citations: { enabled: true }, cache_control: { type: 'ephemeral' } },
    { type: 'document', source: { type: 'url', url: 'https://x/a.pdf' } },
    { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain' }, title: null },
    { type: 'document', source: { type: 'content', content: [{ type: 'text', text: 'a' }, { type: 'image', source: png }] } },
    { type: 'document', source: { type: 'content', content: 'as a string' } },
    { type: 'document', source: { type: 'file', file_id: 'file_01' } },
    { type: 'image', source: { type: 'file', file_id: 'file_02' } },
    { type: 'tool_result', tool_use_id: 't', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }] },
  ] })],
  ['unknown members of sources', withBlock({ type: 'image', source: { ...png, some_future_field: 1 } })],
];

const invalidMessages: Invalid[] = [
  { name: 'max_tokens missing', body: { model: 'm', messages: [user] }, param: 'max_tokens', message: /is required/ },
  { name: 'max_tokens 0', body: messages({ max_tokens: 0 }), param: 'max_tokens', message: /greater than 0/ },
  { name: 'max_tokens a string', body: messages({ max_tokens: '64' }), param: 'max_tokens', message: /must be an integer \(got a string\)/ },
  { name: 'model missing', body: { max_tokens: 1, messages: [user] }, param: 'model', message: /is required/ },
  { name: 'messages empty', body: messages({ messages: [] }), param: 'messages', message: /at least 1 item/ },
  { name: 'temperature above 1', body: messages({ temperature: 1.5 }), param: 'temperature', message: /at most 1 \(got 1\.5\)/ },
  { name: 'top_p below 0', body: messages({ top_p: -1 }), param: 'top_p', message: /at least 0/ },
  { name: 'top_k negative', body: messages({ top_k: -1 }), param: 'top_k', message: /at least 0/ },
  { name: 'top_k fractional', body: messages({ top_k: 2.5 }), param: 'top_k', message: /integer/ },
  { name: 'top_k above 2^53-1', body: messages({ top_k: 2 ** 53 }), param: 'top_k', message: /at most 9007199254740991/ },
  { name: 'stop_sequences a string', body: messages({ stop_sequences: 'END' }), param: 'stop_sequences', message: /must be an array/ },
  { name: 'system a number', body: messages({ system: 5 }), param: 'system', message: /a string or an array/ },
  { name: 'system with an image block', body: messages({ system: [{ type: 'image', source: png }] }), param: 'system[0].type', message: /must be "text" \(got "image"\): system content takes text blocks only/ },
  { name: 'stream a number', body: messages({ stream: 1 }), param: 'stream', message: /boolean/ },
  { name: 'tool_choice a string', body: messages({ tool_choice: 'auto' }), param: 'tool_choice', message: /must be an object \(got a string\)/ },
  { name: 'thinking a boolean', body: messages({ thinking: true }), param: 'thinking', message: /must be an object/ },
  { name: 'metadata an array', body: messages({ metadata: [] }), param: 'metadata', message: /must be an object \(got an array\)/ },
  { name: 'tool without a name', body: messages({ tools: [{ input_schema: {} }] }), param: 'tools[0].name', message: /is required/ },
  { name: 'tool with an empty name', body: messages({ tools: [{ name: '' }] }), param: 'tools[0].name', message: /non-empty/ },
  { name: 'a server tool', body: messages({ tools: [{ type: 'web_search_20250305', name: 'web_search' }] }), param: 'tools[0].type', message: /"custom" or null \(got "web_search_20250305"\): only client tools/ },
  { name: 'tool input_schema not an object', body: messages({ tools: [{ name: 'f', input_schema: 'x' }] }), param: 'tools[0].input_schema', message: /must be an object/ },
  { name: 'role tool', body: messagesWith({ role: 'tool', content: 'x' }), param: 'messages[0].role', message: /"user", "assistant" or "system" \(got "tool"\)/ },
  { name: 'content missing', body: messagesWith({ role: 'user' }), param: 'messages[0].content', message: /is required/ },
  { name: 'content null', body: messagesWith({ role: 'assistant', content: null }), param: 'messages[0].content', message: /a string or an array \(got null\)/ },
  { name: 'search_result block', body: withBlock({ type: 'search_result', source: 'x' }), param: 'messages[0].content[0].type', message: /"text", "image", "document", "tool_use", "tool_result", "thinking" or "redacted_thinking" \(got "search_result"\)/ },
  { name: 'document without source', body: withBlock({ type: 'document' }), param: 'messages[0].content[0].source', message: /is required/ },
  { name: 'document source of an unknown type', body: withBlock({ type: 'document', source: { type: 'ftp' } }), param: 'messages[0].content[0].source.type', message: /"base64", "text", "url", "content" or "file" \(got "ftp"\)/ },
  { name: 'base64 document without data', body: withBlock({ type: 'document', source: { type: 'base64', media_type: 'application/pdf' } }), param: 'messages[0].content[0].source.data', message: /is required/ },
  { name: 'text document without media_type', body: withBlock({ type: 'document', source: { type: 'text', data: 'x' } }), param: 'messages[0].content[0].source.media_type', message: /is required/ },
  { name: 'document of blocks with a tool_use', body: withBlock({ type: 'document', source: { type: 'content', content: [{ type: 'tool_use', id: 'a', name: 'f', input: {} }] } }), param: 'messages[0].content[0].source.content[0].type', message: /"text" or "image" \(got "tool_use"\)/ },
  { name: 'document title a number', body: withBlock({ type: 'document', source: { type: 'url', url: 'https://x' }, title: 5 }), param: 'messages[0].content[0].title', message: /a string or null/ },
  { name: 'document cache_control ttl', body: withBlock({ type: 'document', source: { type: 'url', url: 'https://x' }, cache_control: { type: 'ephemeral', ttl: '2h' } }), param: 'messages[0].content[0].cache_control.ttl', message: /"5m" or "1h"/ },
  { name: 'text block without text', body: withBlock({ type: 'text' }), param: 'messages[0].content[0].text', message: /is required/ },
  { name: 'text block cache_control ttl', body: withBlock({ type: 'text', text: 'a', cache_control: { type: 'ephemeral', ttl: '10m' } }), param: 'messages[0].content[0].cache_control.ttl', message: /"5m" or "1h"/ },
  { name: 'image source of an unknown type', body: withBlock({ type: 'image', source: { type: 'ftp' } }), param: 'messages[0].content[0].source.type', message: /"base64", "url" or "file" \(got "ftp"\)/ },
  { name: 'image from a file without its id', body: withBlock({ type: 'image', source: { type: 'file' } }), param: 'messages[0].content[0].source.file_id', message: /is required/ },
  { name: 'base64 image without media_type', body: withBlock({ type: 'image', source: { type: 'base64', data: 'x' } }), param: 'messages[0].content[0].source.media_type', message: /is required/ },
  { name: 'url image with an empty url', body: withBlock({ type: 'image', source: { type: 'url', url: '' } }), param: 'messages[0].content[0].source.url', message: /non-empty/ },
  { name: 'image without source', body: withBlock({ type: 'image' }), param: 'messages[0].content[0].source', message: /is required/ },
  { name: 'tool_use without input', body: withBlock({ type: 'tool_use', id: 'a', name: 'f' }, 'assistant'), param: 'messages[0].content[0].input', message: /is required/ },
  { name: 'tool_use with an empty id', body: withBlock({ type: 'tool_use', id: '', name: 'f', input: {} }, 'assistant'), param: 'messages[0].content[0].id', message: /non-empty/ },
  { name: 'tool_result without tool_use_id', body: withBlock({ type: 'tool_result', content: 'x' }), param: 'messages[0].content[0].tool_use_id', message: /is required/ },
  { name: 'tool_result is_error a string', body: withBlock({ type: 'tool_result', tool_use_id: 'a', is_error: 'yes' }), param: 'messages[0].content[0].is_error', message: /boolean/ },
  { name: 'tool_result with a bad inner block', body: withBlock({ type: 'tool_result', tool_use_id: 'a', content: [{ type: 'text', text: 1 }] }), param: 'messages[0].content[0].content[0].text', message: /must be a string/ },
  { name: 'thinking without thinking', body: withBlock({ type: 'thinking', signature: 's' }, 'assistant'), param: 'messages[0].content[0].thinking', message: /is required/ },
  { name: 'redacted_thinking without data', body: withBlock({ type: 'redacted_thinking' }, 'assistant'), param: 'messages[0].content[0].data', message: /is required/ },
  { name: 'system message with an image', body: messagesWith({ role: 'system', content: [{ type: 'image', source: png }] }), param: 'messages[0].content[0].type', message: /system content takes text blocks only/ },
  { name: 'system message clear_at unknown', body: messagesWith({ role: 'system', content: 'x', clear_at: 'always' }), param: 'messages[0].clear_at', message: /"never" or "next_user_message"/ },
  { name: 'system message effort unknown', body: messagesWith({ role: 'system', content: 'x', output_config: { effort: 'minimal' } }), param: 'messages[0].output_config.effort', message: /"low", "medium", "high", "xhigh" or "max" \(got "minimal"\)/ },
  { name: 'system message output_config without effort', body: messagesWith({ role: 'system', content: 'x', output_config: {} }), param: 'messages[0].output_config.effort', message: /is required/ },
];

async function accepts(t: Test, route: Route, table: [string, Body][]) {
  for (const [name, body] of table) {
    const ctx = fakeCtx(route, body);
    const err = await check(ctx);
    t.equal(err?.message, undefined, `${route} accepts: ${name}`);
    t.same(ctx.body, body, `${route} sets ctx.body: ${name}`);
  }
}

async function rejects(t: Test, route: Route, table: Invalid[]) {
  for (const c of table) {
    const err = await check(fakeCtx(route, c.body));
    t.ok(err, `${route} rejects: ${c.name}`);
    if (!err) continue;
    t.match(
      { status: err.status, type: err.type, param: err.param },
      { status: 400, type: 'invalid_request_error', param: c.param },
      `${c.name}: 400 naming ${c.param}`,
    );
    t.ok(err.message.startsWith(`${c.param}: `), `${c.name}: the message starts with the field (${err.message})`);
    t.match(err.message, c.message, `${c.name}: says what is wrong and allowed`);
    if (c.code) t.equal(err.code, c.code, `${c.name}: code ${c.code}`);
  }
}

t.test('chat completions: valid bodies', (t) => accepts(t, 'chat', validChat));
t.test('chat completions: invalid bodies', (t) => rejects(t, 'chat', invalidChat));
t.test('messages: valid bodies', (t) => accepts(t, 'messages', validMessages));
t.test('messages: invalid bodies', (t) => rejects(t, 'messages', invalidMessages));

t.test('count_tokens: the messages shape without max_tokens', async (t) => {
  await accepts(t, 'count_tokens', [
    ['without max_tokens', { model: 'm', messages: [user] }],
    ['with system and tools', { model: 'm', system: 'x', tools: [{ name: 'f', input_schema: { type: 'object' } }], messages: [user] }],
  ]);
  await rejects(t, 'count_tokens', [
    { name: 'messages missing', body: { model: 'm' }, param: 'messages', message: /is required/ },
    { name: 'a document block without source', body: { model: 'm', messages: [{ role: 'user', content: [{ type: 'document' }] }] }, param: 'messages[0].content[0].source', message: /is required/ },
    { name: 'temperature above 1', body: { model: 'm', messages: [user], temperature: 2 }, param: 'temperature', message: /at most 1/ },
  ]);
});

t.test('a messages body is not a chat body and the other way round', async (t) => {
  t.equal((await check(fakeCtx('chat', messages({ system: 'x' }))))?.param, undefined, 'unknown top-level members pass on chat');
  t.equal((await check(fakeCtx('messages', messagesWith({ role: 'developer', content: 'x' }))))?.param, 'messages[0].role');
});
