// Chat-completions request → messages-format request: every row of the mapping table, the request-side
// failure modes, and the strict upstream's own checks (the simulator's validator) on the result.
import t from 'tap';
import { chatToMessagesRequest, CONTINUE_TEXT } from '../../../plugins/format-transform/chat-to-messages.js';
import { validateMessagesRequest } from '../../../lib/simulator/validate.js';
import { thinkingSignature } from '../../../lib/simulator/answer.js';
import { thrown } from './fixtures.js';

const opts = { defaultMaxTokens: 8192, stream: false };
const convert = (body: Record<string, any>, o = opts) => {
  const out = chatToMessagesRequest(deepFreeze(structuredClone(body)), o);
  validateMessagesRequest(out, false); // a strict messages upstream accepts it
  return out;
};
function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object') {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}
const user = (content: any) => ({ role: 'user', content });

t.test('system and developer messages anywhere → top-level system blocks, cache_control kept (failure mode 15)', async (t) => {
  const out = convert({
    model: 'm',
    messages: [
      { role: 'system', content: 'Be brief.' },
      user('Hi'),
      { role: 'developer', content: [{ type: 'text', text: 'Rules', cache_control: { type: 'ephemeral', ttl: '1h' } }, { type: 'text', text: 'More' }] },
    ],
  });
  t.strictSame(out.system, [
    { type: 'text', text: 'Be brief.' },
    { type: 'text', text: 'Rules', cache_control: { type: 'ephemeral', ttl: '1h' } },
    { type: 'text', text: 'More' },
  ]);
  t.strictSame(out.messages, [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }]);
});

t.test('user text and images: data URL → base64, http URL → url, detail dropped', async (t) => {
  const out = convert({
    model: 'm',
    messages: [
      user([
        { type: 'text', text: 'What is this?' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'high' } },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg', detail: 'low' } },
        { type: 'image_url', image_url: { url: 'data:image/jpg;base64,/9j/4AAQ' } },
      ]),
    ],
  });
  t.strictSame(out.messages[0].content, [
    { type: 'text', text: 'What is this?' },
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
    { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
    { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQ' } },
  ]);
});

t.test('failure mode 13: media types outside the four allowed are refused with a 400 naming the part', async (t) => {
  for (const url of ['data:image/bmp;base64,Qk0=', 'data:image/svg+xml;base64,PHN2Zz4=', 'data:image/png,notbase64']) {
    t.strictSame(
      thrown(() => chatToMessagesRequest({ model: 'm', messages: [user([{ type: 'image_url', image_url: { url } }])] }, opts)),
      { status: 400, param: 'messages[0].content[0].image_url.url' },
      url,
    );
  }
  const out = convert({ model: 'm', messages: [user([{ type: 'image_url', image_url: { url: 'http://example.com/a.gif' } }])] });
  t.strictSame(out.messages[0].content[0].source, { type: 'url', url: 'http://example.com/a.gif' }, 'URL images stay URLs');
});

const toolHistory = () => [
  user('Weather in Paris and the time?'),
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
      { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '' } },
    ],
  },
  { role: 'tool', tool_call_id: 'call_1', content: 'Sunny' },
  { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: '12:00' }] },
];
const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: true } },
  { type: 'function', function: { name: 'get_time' } },
];

t.test('tool calls → tool_use (failure mode 4: "" means {}); consecutive tool messages → one user message of results', async (t) => {
  const out = convert({ model: 'm', messages: toolHistory(), tools });
  t.strictSame(out.messages.slice(1), [
    {
      role: 'assistant',
      content: [
        { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'call_2', name: 'get_time', input: {} },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'call_1', content: 'Sunny' },
        { type: 'tool_result', tool_use_id: 'call_2', content: [{ type: 'text', text: '12:00' }] },
      ],
    },
  ]);
});

t.test('tools: parameters → input_schema (default object schema), description and strict kept', async (t) => {
  const out = convert({ model: 'm', messages: [user('x')], tools });
  t.strictSame(out.tools, [
    { name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } }, description: 'Weather', strict: true },
    { name: 'get_time', input_schema: { type: 'object', properties: {} } },
  ]);
  t.notOk('tool_choice' in out, 'no tool_choice unless asked');
});

t.test('tool fields the messages format has no counterpart for are dropped', async (t) => {
  const tool = { type: 'function', function: { name: 'f', parameters: { type: 'object' }, strict: false, some_future_field: 1 }, some_future_field: 2 };
  t.strictSame(convert({ model: 'm', messages: [user('x')], tools: [tool] }).tools, [{ name: 'f', input_schema: { type: 'object' }, strict: false }]);
});

const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Pages /Kids [2 0 R] /Count 1 >> endobj\n2 0 obj << /Type /Page /Parent 1 0 R >> endobj\n%%EOF\n').toString('base64');

t.test('file parts → document blocks: a PDF as base64, a text file as a text document, the file name as title', async (t) => {
  const cc = { type: 'ephemeral' };
  const out = convert({ model: 'm', messages: [user([
    { type: 'text', text: 'Read these' },
    { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF}`, filename: 'report.pdf' }, cache_control: cc },
    { type: 'file', file: { file_data: `data:text/plain;base64,${Buffer.from('héllo').toString('base64')}` } },
  ])] });
  t.strictSame(out.messages, [{ role: 'user', content: [
    { type: 'text', text: 'Read these' },
    { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF }, title: 'report.pdf', cache_control: cc },
    { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'héllo' } },
  ] }]);
});

t.test('a file in a tool message becomes a document inside the tool result', async (t) => {
  const out = convert({ model: 'm', tools, messages: [
    user('Fetch'),
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_time', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'file', file: { file_data: `data:application/pdf;base64,${PDF}`, filename: 'a.pdf' } }] },
  ] });
  t.strictSame(out.messages[2].content, [{ type: 'tool_result', tool_use_id: 'call_1', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF }, title: 'a.pdf' }] }]);
});

t.test('files the messages format cannot take (a chat vendor file id, another type, not a data URL) are a 400 naming them', async (t) => {
  const err = (file: Record<string, any>) => thrown(() => chatToMessagesRequest({ model: 'm', messages: [user([{ type: 'file', file }])] }, opts));
  t.strictSame(err({ file_id: 'file-abc' }), { status: 400, param: 'messages[0].content[0].file' });
  t.strictSame(err({ file_data: 'data:application/msword;base64,AAAA', filename: 'a.doc' }), { status: 400, param: 'messages[0].content[0].file.file_data' });
  t.strictSame(err({ file_data: PDF, filename: 'a.pdf' }), { status: 400, param: 'messages[0].content[0].file.file_data' });
});

t.test('tool_choice and parallel_tool_calls', async (t) => {
  const choice = (tool_choice: any, parallel_tool_calls?: boolean) =>
    convert({ model: 'm', messages: [user('x')], tools, tool_choice, parallel_tool_calls }).tool_choice;
  t.strictSame(choice('auto'), { type: 'auto' });
  t.strictSame(choice('none'), { type: 'none' });
  t.strictSame(choice('required'), { type: 'any' });
  t.strictSame(choice({ type: 'function', function: { name: 'get_time' } }), { type: 'tool', name: 'get_time' });
  t.strictSame(choice('required', false), { type: 'any', disable_parallel_tool_use: true });
  t.strictSame(choice(undefined, false), { type: 'auto', disable_parallel_tool_use: true });
  t.strictSame(choice('none', false), { type: 'none' }, 'never on none');
  t.strictSame(choice('auto', true), { type: 'auto' });
});

t.test('failure mode 14: tool ids are sanitized the same way on tool_use and tool_result', async (t) => {
  const out = convert({
    model: 'm',
    tools,
    messages: [
      user('x'),
      { role: 'assistant', content: '', tool_calls: [{ id: 'functions.get_time:0', type: 'function', function: { name: 'get_time', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'functions.get_time:0', content: 'noon' },
    ],
  });
  t.equal(out.messages[1].content[0].id, 'functions_get_time_0');
  t.equal(out.messages[2].content[0].tool_use_id, 'functions_get_time_0');
});

t.test('failure mode 16: results not right after their tool_use are moved there, results first; content null', async (t) => {
  const [first, assistant, r1, r2] = toolHistory();
  const out = convert({ model: 'm', tools, messages: [first, assistant, user('Also, hurry.'), r2, r1] });
  t.strictSame(out.messages[2], {
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: 'call_2', content: [{ type: 'text', text: '12:00' }] },
      { type: 'tool_result', tool_use_id: 'call_1', content: 'Sunny' },
      { type: 'text', text: 'Also, hurry.' },
    ],
  });
  t.equal(out.messages.length, 3);
});

t.test('failure mode 16: history with tool blocks but no tools → the used tools are declared, calls forbidden', async (t) => {
  const out = convert({ model: 'm', messages: toolHistory() });
  t.strictSame(out.tools, [
    { name: 'get_weather', input_schema: { type: 'object', properties: {} } },
    { name: 'get_time', input_schema: { type: 'object', properties: {} } },
  ]);
  t.strictSame(out.tool_choice, { type: 'none' });
});

t.test('tool call arguments that are not a JSON object are a 400 naming them', async (t) => {
  const body = {
    model: 'm',
    messages: [user('x'), { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{oops' } }] }],
  };
  t.strictSame(thrown(() => chatToMessagesRequest(body, opts)), { status: 400, param: 'messages[1].tool_calls[0].function.arguments' });
});

t.test('stop → stop_sequences without whitespace-only entries', async (t) => {
  t.strictSame(convert({ model: 'm', messages: [user('x')], stop: 'END' }).stop_sequences, ['END']);
  t.strictSame(convert({ model: 'm', messages: [user('x')], stop: ['\n', 'END', ' ', '\nHuman:'] }).stop_sequences, ['END', '\nHuman:']);
  t.notOk('stop_sequences' in convert({ model: 'm', messages: [user('x')], stop: ['\n\n'] }));
  t.notOk('stop_sequences' in convert({ model: 'm', messages: [user('x')], stop: null }));
});

t.test('max_tokens: max_completion_tokens, else max_tokens, else the default (the output budget)', async (t) => {
  t.equal(convert({ model: 'm', messages: [user('x')], max_completion_tokens: 10, max_tokens: 20 }).max_tokens, 10);
  t.equal(convert({ model: 'm', messages: [user('x')], max_tokens: 20 }).max_tokens, 20);
  t.equal(convert({ model: 'm', messages: [user('x')] }).max_tokens, 8192);
});

t.test('temperature clamped to 0–1, top_p kept, user → metadata.user_id, stream flag', async (t) => {
  const out = convert({ model: 'm', messages: [user('x')], temperature: 1.7, top_p: 0.9, user: 'u-42' }, { ...opts, stream: true });
  t.equal(out.temperature, 1);
  t.equal(out.top_p, 0.9);
  t.strictSame(out.metadata, { user_id: 'u-42' });
  t.equal(out.stream, true);
  t.equal(convert({ model: 'm', messages: [user('x')], temperature: 0.3 }).temperature, 0.3);
  t.notOk('stream' in convert({ model: 'm', messages: [user('x')] }));
});

t.test('reasoning_effort → thinking budget (≥1024, < max_tokens); temperature left out with thinking', async (t) => {
  const thinking = (reasoning_effort: string, max_tokens: number) =>
    convert({ model: 'm', messages: [user('x')], reasoning_effort, max_tokens, temperature: 0.5 });
  t.strictSame(thinking('low', 10000).thinking, { type: 'enabled', budget_tokens: 2000 });
  t.strictSame(thinking('medium', 10000).thinking, { type: 'enabled', budget_tokens: 5000 });
  t.strictSame(thinking('high', 10000).thinking, { type: 'enabled', budget_tokens: 8000 });
  t.strictSame(thinking('minimal', 4000).thinking, { type: 'enabled', budget_tokens: 1024 });
  t.strictSame(thinking('max', 1100).thinking, { type: 'enabled', budget_tokens: 1045 });
  t.notOk('temperature' in thinking('high', 10000), 'extended thinking refuses a changed temperature');
  t.notOk('thinking' in thinking('high', 1024), 'no budget fits below max_tokens');
  t.equal(thinking('high', 1024).temperature, 0.5);
  t.notOk('thinking' in thinking('none', 10000));
  const forced = convert({ model: 'm', messages: [user('x')], tools, tool_choice: 'required', reasoning_effort: 'high', max_tokens: 10000 });
  t.notOk('thinking' in forced, 'no thinking with a forced tool choice, which the upstream refuses');
});

t.test('response_format json_schema → output_config.format; others dropped', async (t) => {
  const schema = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false };
  const out = convert({ model: 'm', messages: [user('x')], response_format: { type: 'json_schema', json_schema: { name: 'r', schema, strict: true } } });
  t.strictSame(out.output_config, { format: { type: 'json_schema', schema } });
  t.notOk('output_config' in convert({ model: 'm', messages: [user('x')], response_format: { type: 'text' } }));
});

t.test('failure mode 6: reasoning_details go back unchanged as the first assistant blocks', async (t) => {
  const thought = 'I should call the tool.';
  const out = convert({
    model: 'm',
    tools,
    reasoning_effort: 'high',
    max_tokens: 4000,
    messages: [
      user('x'),
      {
        role: 'assistant',
        content: 'Calling.',
        reasoning_content: thought,
        reasoning_details: [
          { type: 'thinking', thinking: thought, signature: thinkingSignature(thought) },
          { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' },
          { type: 'thinking', thinking: 'unsigned reasoning from another vendor' },
        ],
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_time', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'noon' },
    ],
  });
  t.strictSame(out.messages[1].content, [
    { type: 'thinking', thinking: thought, signature: thinkingSignature(thought) },
    { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' },
    { type: 'text', text: 'Calling.' },
    { type: 'tool_use', id: 'call_1', name: 'get_time', input: {} },
  ]);
});

t.test('failure mode 5: empty and whitespace-only texts never become blocks', async (t) => {
  const out = convert({
    model: 'm',
    tools,
    messages: [
      user([{ type: 'text', text: '' }, { type: 'text', text: 'real' }, { type: 'text', text: '  \n' }]),
      { role: 'assistant', content: '', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_time', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: '' },
      { role: 'assistant', content: [{ type: 'text', text: '' }] },
      user('next'),
    ],
  });
  t.strictSame(out.messages, [
    { role: 'user', content: [{ type: 'text', text: 'real' }] },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'c1', name: 'get_time', input: {} }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c1' }, { type: 'text', text: 'next' }] },
  ]);
});

t.test('failure mode 15: at most 4 cache_control breakpoints, the latest kept; message-level cache_control applied', async (t) => {
  const cc = { type: 'ephemeral' };
  const out = convert({
    model: 'm',
    tools: [{ ...tools[1], cache_control: cc }],
    messages: [
      { role: 'system', content: [{ type: 'text', text: 'S1', cache_control: cc }] },
      { role: 'user', content: [{ type: 'text', text: 'U1', cache_control: cc }] },
      { role: 'assistant', content: 'A1', cache_control: cc },
      { role: 'user', content: [{ type: 'text', text: 'U2', cache_control: cc }] },
      { role: 'assistant', content: 'A2' },
      { role: 'user', content: 'U3', cache_control: cc },
    ],
  });
  t.notOk('cache_control' in out.tools[0], 'the earliest marks (tools, then system) dropped');
  t.strictSame(out.system, [{ type: 'text', text: 'S1' }]);
  t.strictSame(
    out.messages.map((m: any) => m.content.map((b: any) => [b.text, 'cache_control' in b])),
    [[['U1', true]], [['A1', true]], [['U2', true]], [['A2', false]], [['U3', true]]],
  );
  const marks = JSON.stringify(out).split('cache_control').length - 1;
  t.equal(marks, 4);
});

t.test('failure mode 17: the first message is a user turn; consecutive same-role turns are merged', async (t) => {
  const out = convert({
    model: 'm',
    messages: [
      { role: 'system', content: 'S' },
      { role: 'assistant', content: 'I start.' },
      user('one'),
      user([{ type: 'text', text: 'two' }]),
      { role: 'assistant', content: 'a' },
      { role: 'assistant', content: 'b' },
    ],
  });
  t.strictSame(out.messages, [
    { role: 'user', content: [{ type: 'text', text: CONTINUE_TEXT }] },
    { role: 'assistant', content: [{ type: 'text', text: 'I start.' }] },
    { role: 'user', content: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] },
  ]);
  t.strictSame(convert({ model: 'm', messages: [{ role: 'system', content: 'only system' }] }).messages, [
    { role: 'user', content: [{ type: 'text', text: CONTINUE_TEXT }] },
  ]);
});

t.test('unsupported parts and roles are a 400 naming them', async (t) => {
  t.strictSame(
    thrown(() => chatToMessagesRequest({ model: 'm', messages: [user([{ type: 'input_audio', input_audio: {} }])] }, opts)),
    { status: 400, param: 'messages[0].content[0]' },
  );
  t.strictSame(thrown(() => chatToMessagesRequest({ model: 'm', messages: [{ role: 'function', content: 'x' }] }, opts)), { status: 400, param: 'messages[0].role' });
  t.strictSame(thrown(() => chatToMessagesRequest({ model: 'm', messages: [user('x')], tools: [{ type: 'custom', custom: {} }] }, opts)), { status: 400, param: 'tools[0]' });
});
