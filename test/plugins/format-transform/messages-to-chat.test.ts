// Messages-format request → chat-completions request: every row of the mapping table (reverse
// direction), checked by the strict chat upstream's own validator (the simulator's).
import t from 'tap';
import { messagesToChatRequest } from '../../../plugins/format-transform/messages-to-chat.js';
import { validateChatRequest } from '../../../lib/simulator/validate.js';
import { thinkingSignature } from '../../../lib/simulator/answer.js';
import { thrown } from './fixtures.js';

const convert = (body: Record<string, any>, stream = false) => {
  const frozen = JSON.parse(JSON.stringify(body), (_k, v) => (v && typeof v === 'object' ? Object.freeze(v) : v));
  const out = messagesToChatRequest(frozen, { stream });
  validateChatRequest(out);
  return out;
};
const base = { model: 'm', max_tokens: 1000 };
const user = (content: any) => ({ role: 'user', content });

t.test('system: a plain string or joined-free text blocks; cache_control keeps the parts (failure mode 15)', async (t) => {
  t.strictSame(convert({ ...base, system: 'Be brief.', messages: [user('Hi')] }).messages, [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Hi' },
  ]);
  const cc = { type: 'ephemeral' };
  t.strictSame(convert({ ...base, system: [{ type: 'text', text: 'A' }, { type: 'text', text: 'B', cache_control: cc }], messages: [user('Hi')] }).messages[0], {
    role: 'system',
    content: [{ type: 'text', text: 'A' }, { type: 'text', text: 'B', cache_control: cc }],
  });
  t.strictSame(
    convert({ ...base, messages: [user('Hi'), { role: 'system', content: 'Mid-conversation instruction' }] }).messages[1],
    { role: 'system', content: 'Mid-conversation instruction' },
    'system messages inside the conversation stay in place',
  );
});

t.test('user text and images: base64 → data URL, url → url', async (t) => {
  const out = convert({
    ...base,
    messages: [
      user([
        { type: 'text', text: 'Look' },
        { type: 'image', source: { type: 'base64', media_type: 'image/webp', data: 'UklGR' } },
        { type: 'image', source: { type: 'url', url: 'https://example.com/x.png' } },
      ]),
    ],
  });
  t.strictSame(out.messages[0], {
    role: 'user',
    content: [
      { type: 'text', text: 'Look' },
      { type: 'image_url', image_url: { url: 'data:image/webp;base64,UklGR' } },
      { type: 'image_url', image_url: { url: 'https://example.com/x.png' } },
    ],
  });
  t.strictSame(
    thrown(() => messagesToChatRequest({ ...base, messages: [user([{ type: 'image', source: { type: 'base64', media_type: 'image/tiff', data: 'x' } }])] }, { stream: false })),
    { status: 400, param: 'messages[0].content[0].source' },
    'failure mode 13',
  );
});

t.test('assistant: thinking → reasoning_content + reasoning_details unchanged, tool_use → tool_calls; results → tool messages first', async (t) => {
  const thought = 'Need the time.';
  const sig = thinkingSignature(thought);
  const out = convert({
    ...base,
    tools: [{ name: 'get_time', input_schema: { type: 'object', properties: {} } }],
    messages: [
      user('Time?'),
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: thought, signature: sig },
          { type: 'redacted_thinking', data: 'opaque' },
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'toolu_1', name: 'get_time', input: {} },
          { type: 'tool_use', id: 'toolu_2', name: 'get_time', input: { tz: 'UTC' } },
        ],
      },
      user([
        { type: 'tool_result', tool_use_id: 'toolu_1', content: 'noon' },
        {
          type: 'tool_result',
          tool_use_id: 'toolu_2',
          content: [
            { type: 'text', text: '12:00 UTC' },
            { type: 'image', source: { type: 'url', url: 'https://example.com/clock.png' } },
          ],
        },
        { type: 'text', text: 'Thanks' },
      ]),
    ],
  });
  t.strictSame(out.messages.slice(1), [
    {
      role: 'assistant',
      content: 'Checking.',
      tool_calls: [
        { id: 'toolu_1', type: 'function', function: { name: 'get_time', arguments: '{}' } },
        { id: 'toolu_2', type: 'function', function: { name: 'get_time', arguments: '{"tz":"UTC"}' } },
      ],
      reasoning_content: thought,
      reasoning_details: [
        { type: 'thinking', thinking: thought, signature: sig },
        { type: 'redacted_thinking', data: 'opaque' },
      ],
    },
    { role: 'tool', tool_call_id: 'toolu_1', content: 'noon' },
    { role: 'tool', tool_call_id: 'toolu_2', content: '12:00 UTC' },
    {
      role: 'user',
      content: [
        { type: 'image_url', image_url: { url: 'https://example.com/clock.png' } },
        { type: 'text', text: 'Thanks' },
      ],
    },
  ]);
});

t.test('failure mode 5 and 16: an assistant turn of only tool calls has content null; empty texts vanish', async (t) => {
  const out = convert({
    ...base,
    tools: [{ name: 'f', input_schema: { type: 'object' } }],
    messages: [
      user([{ type: 'text', text: '' }, { type: 'text', text: 'go' }]),
      { role: 'assistant', content: [{ type: 'text', text: '' }, { type: 'tool_use', id: 't1', name: 'f', input: {} }] },
      user([{ type: 'tool_result', tool_use_id: 't1' }]),
    ],
  });
  t.strictSame(out.messages, [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: null, tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 't1', content: '' },
  ]);
});

t.test('tools, tool_choice and disable_parallel_tool_use', async (t) => {
  const tools = [{ name: 'f', description: 'F', input_schema: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false }, strict: true, cache_control: { type: 'ephemeral' } }];
  const out = convert({ ...base, tools, tool_choice: { type: 'any', disable_parallel_tool_use: true }, messages: [user('x')] });
  t.strictSame(out.tools, [{ type: 'function', function: { name: 'f', parameters: tools[0].input_schema, description: 'F', strict: true } }]);
  t.equal(out.tool_choice, 'required');
  t.equal(out.parallel_tool_calls, false);
  const choice = (tool_choice: any) => convert({ ...base, tools, tool_choice, messages: [user('x')] });
  t.equal(choice({ type: 'auto' }).tool_choice, 'auto');
  t.equal(choice({ type: 'none' }).tool_choice, 'none');
  t.strictSame(choice({ type: 'tool', name: 'f' }).tool_choice, { type: 'function', function: { name: 'f' } });
  t.notOk('parallel_tool_calls' in choice({ type: 'auto' }));
  const typed = convert({ ...base, tools: [{ type: 'custom', name: 'g', input_schema: { type: 'object' } }], messages: [user('x')] });
  t.strictSame(typed.tools, [{ type: 'function', function: { name: 'g', parameters: { type: 'object' } } }], 'a tool typed custom (as SDKs send it) is a client tool');
  t.strictSame(
    thrown(() => messagesToChatRequest({ ...base, tools: [{ type: 'web_search_20250305', name: 'web_search' }], messages: [user('x')] }, { stream: false })),
    { status: 400, param: 'tools[0]' },
    'server tools cannot be served by a chat upstream',
  );
});

t.test('stop_sequences, temperature, top_p, metadata.user_id, max_tokens; top_k dropped', async (t) => {
  const out = convert({ ...base, stop_sequences: ['END'], temperature: 0.4, top_p: 0.8, top_k: 5, metadata: { user_id: 'u1' }, messages: [user('x')] });
  t.strictSame(out.stop, ['END']);
  t.equal(out.temperature, 0.4);
  t.equal(out.top_p, 0.8);
  t.equal(out.user, 'u1');
  t.equal(out.max_completion_tokens, 1000);
  t.notOk('top_k' in out);
  t.notOk('stream' in out);
});

t.test('thinking → reasoning_effort by its share of max_tokens; output_config.effort wins', async (t) => {
  const effort = (extra: Record<string, any>) => convert({ ...base, max_tokens: 10000, messages: [user('x')], ...extra }).reasoning_effort;
  t.equal(effort({ thinking: { type: 'enabled', budget_tokens: 2000 } }), 'low');
  t.equal(effort({ thinking: { type: 'enabled', budget_tokens: 5000 } }), 'medium');
  t.equal(effort({ thinking: { type: 'enabled', budget_tokens: 8000 } }), 'high');
  t.equal(effort({ thinking: { type: 'adaptive' } }), 'medium');
  t.equal(effort({ thinking: { type: 'adaptive' }, output_config: { effort: 'xhigh' } }), 'xhigh');
  t.equal(effort({ output_config: { effort: 'low' } }), 'low');
  t.equal(effort({ thinking: { type: 'disabled' } }), undefined);
});

t.test('output_config.format json_schema → response_format json_schema', async (t) => {
  const schema = { type: 'object', properties: { a: { type: 'number' } } };
  t.strictSame(convert({ ...base, output_config: { format: { type: 'json_schema', schema } }, messages: [user('x')] }).response_format, {
    type: 'json_schema',
    json_schema: { name: 'output', schema },
  });
});

t.test('failure mode 8: a stream asks the chat upstream for include_usage', async (t) => {
  const out = convert({ ...base, messages: [user('x')] }, true);
  t.equal(out.stream, true);
  t.strictSame(out.stream_options, { include_usage: true });
});

t.test('unsupported blocks are a 400 naming them', async (t) => {
  t.strictSame(
    thrown(() =>
      messagesToChatRequest(
        { ...base, messages: [user([{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'search_result', source: 'x' }] }])] },
        { stream: false },
      ),
    ),
    { status: 400, param: 'messages[0].content[0].content[0]' },
  );
  t.strictSame(
    thrown(() => messagesToChatRequest({ ...base, messages: [user([{ type: 'search_result', source: 'x' }])] }, { stream: false })),
    { status: 400, param: 'messages[0].content[0]' },
  );
});

t.test('tool fields the chat format has no counterpart for are dropped; strict is kept', async (t) => {
  const schema = { type: 'object', properties: {}, additionalProperties: false };
  const tool = { name: 'f', input_schema: schema, strict: true, eager_input_streaming: true, defer_loading: false, input_examples: [{}], cache_control: { type: 'ephemeral' } };
  t.strictSame(convert({ ...base, tools: [tool], messages: [user('x')] }).tools, [{ type: 'function', function: { name: 'f', parameters: schema, strict: true } }]);
});

const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Pages /Kids [2 0 R] /Count 1 >> endobj\n2 0 obj << /Type /Page /Parent 1 0 R >> endobj\n%%EOF\n').toString('base64');

t.test('documents: a PDF → a file part named by its title; text and block documents → their parts; context first', async (t) => {
  const cc = { type: 'ephemeral' };
  const out = convert({
    ...base,
    messages: [user([
      { type: 'text', text: 'Summarize these.' },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF }, title: 'Report', context: 'From 2024', citations: { enabled: true }, cache_control: cc },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } },
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Plain words.' }, title: 'Notes' },
      { type: 'document', source: { type: 'content', content: [{ type: 'text', text: 'Block one.' }, { type: 'image', source: { type: 'url', url: 'https://x/a.png' } }] } },
      { type: 'document', source: { type: 'content', content: 'A string of content.' } },
    ])],
  });
  t.strictSame(out.messages, [{ role: 'user', content: [
    { type: 'text', text: 'Summarize these.' },
    { type: 'text', text: 'From 2024' },
    { type: 'file', file: { filename: 'Report', file_data: `data:application/pdf;base64,${PDF}` }, cache_control: cc },
    { type: 'file', file: { filename: 'document.pdf', file_data: `data:application/pdf;base64,${PDF}` } },
    { type: 'text', text: 'Notes' },
    { type: 'text', text: 'Plain words.' },
    { type: 'text', text: 'Block one.' },
    { type: 'image_url', image_url: { url: 'https://x/a.png' } },
    { type: 'text', text: 'A string of content.' },
  ] }]);
});

t.test('documents in tool results join the user message after the tool messages (tool messages carry text only)', async (t) => {
  const out = convert({
    ...base,
    tools: [{ name: 'fetch', input_schema: { type: 'object' } }],
    messages: [
      user('Fetch it'),
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'fetch', input: {} }] },
      user([{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'Here:' }, { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } }] }]),
    ],
  });
  t.strictSame(out.messages.slice(2), [
    { role: 'tool', tool_call_id: 'toolu_1', content: 'Here:' },
    { role: 'user', content: [{ type: 'file', file: { filename: 'document.pdf', file_data: `data:application/pdf;base64,${PDF}` } }] },
  ]);
});

t.test('documents the chat format cannot carry (by URL, by file id, another type) and file images are a 400 naming the source', async (t) => {
  for (const source of [{ type: 'url', url: 'https://x/a.pdf' }, { type: 'file', file_id: 'file_1' }, { type: 'base64', media_type: 'application/msword', data: 'AAAA' }]) {
    const err = thrown(() => messagesToChatRequest({ ...base, messages: [user([{ type: 'document', source }])] }, { stream: false }));
    t.strictSame(err, { status: 400, param: 'messages[0].content[0].source' }, source.type);
  }
  t.strictSame(
    thrown(() => messagesToChatRequest({ ...base, messages: [user([{ type: 'image', source: { type: 'file', file_id: 'f' } }])] }, { stream: false })),
    { status: 400, param: 'messages[0].content[0].source' },
  );
});
