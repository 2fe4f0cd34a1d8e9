// Non-stream answers in both directions: content, tool calls, reasoning, reasons, usage, ids, model.
import t from 'tap';
import { chatCompletionOf } from '../../../plugins/format-transform/response-messages-to-chat.js';
import { messageOf } from '../../../plugins/format-transform/response-chat-to-messages.js';
import { chatToMessagesRequest } from '../../../plugins/format-transform/chat-to-messages.js';
import { messagesToChatRequest } from '../../../plugins/format-transform/messages-to-chat.js';
import { STOP_TO_FINISH } from './fixtures.js';

const anthropicMessage = (over: Record<string, any> = {}) => ({
  id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
  type: 'message',
  role: 'assistant',
  model: 'claude-up',
  content: [
    { type: 'thinking', thinking: 'Let me think.', signature: 'EqQBCgIYAhIM' },
    { type: 'redacted_thinking', data: 'EmwKAhgB' },
    { type: 'text', text: 'I will check ' },
    { type: 'text', text: 'both.' },
    { type: 'tool_use', id: 'toolu_01A', name: 'get_weather', input: { city: 'Paris' } },
    { type: 'tool_use', id: 'toolu_01B', name: 'get_time', input: {} },
  ],
  stop_reason: 'tool_use',
  stop_sequence: null,
  usage: { input_tokens: 20, cache_creation_input_tokens: 100, cache_read_input_tokens: 2000, output_tokens: 50, output_tokens_details: { thinking_tokens: 12 } },
  ...over,
});

t.test('messages answer → chat completion for a chat client', async (t) => {
  const out = chatCompletionOf(anthropicMessage(), 'test/claude', 1700000000);
  t.strictSame(out, {
    id: 'chatcmpl-msg_01XFDUDYJgAACzvnptvVoYEL',
    object: 'chat.completion',
    created: 1700000000,
    model: 'test/claude',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: 'I will check both.',
          refusal: null,
          tool_calls: [
            { id: 'toolu_01A', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            // failure mode 4: a call without arguments is "{}" outside streams
            { id: 'toolu_01B', type: 'function', function: { name: 'get_time', arguments: '{}' } },
          ],
          // failure mode 6: reasoning with its signature, to be passed back unchanged
          reasoning_content: 'Let me think.',
          reasoning_details: [
            { type: 'thinking', thinking: 'Let me think.', signature: 'EqQBCgIYAhIM' },
            { type: 'redacted_thinking', data: 'EmwKAhgB' },
          ],
        },
        finish_reason: 'tool_calls',
        logprobs: null,
      },
    ],
    // failure mode 9: cache reads and writes are inside prompt_tokens; reads are cached_tokens
    usage: {
      prompt_tokens: 2120,
      completion_tokens: 50,
      total_tokens: 2170,
      prompt_tokens_details: { cached_tokens: 2000 },
      completion_tokens_details: { reasoning_tokens: 12 },
    },
  });
});

t.test('failure mode 7: stop_reason → finish_reason, a turn with tool calls is always tool_calls', async (t) => {
  const text = [{ type: 'text', text: 'x' }];
  for (const [stop, finish] of STOP_TO_FINISH) {
    t.equal(chatCompletionOf(anthropicMessage({ content: text, stop_reason: stop }), 'm', 0).choices[0].finish_reason, finish, stop);
  }
  t.equal(chatCompletionOf(anthropicMessage({ stop_reason: 'end_turn' }), 'm', 0).choices[0].finish_reason, 'tool_calls');
  const plain = chatCompletionOf(anthropicMessage({ content: [], stop_reason: 'end_turn' }), 'm', 0).choices[0].message;
  t.strictSame(plain, { role: 'assistant', content: null, refusal: null }, 'no text: content null, no empty extras');
});

const openaiCompletion = (over: Record<string, any> = {}, message: Record<string, any> = {}) => ({
  id: 'chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG',
  object: 'chat.completion',
  created: 1741570283,
  model: 'gpt-up',
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        content: 'Checking.',
        refusal: null,
        tool_calls: [
          { id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'functions.get_time:1', type: 'function', function: { name: 'get_time', arguments: '' } },
        ],
        reasoning_content: 'Hmm.',
        reasoning_details: [{ type: 'thinking', thinking: 'Hmm.', signature: 'c2ln' }],
        ...message,
      },
      logprobs: null,
      finish_reason: 'tool_calls',
    },
  ],
  usage: { prompt_tokens: 1117, completion_tokens: 46, total_tokens: 1163, prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 } },
  system_fingerprint: 'fp_fc9f1d7035',
  ...over,
});

t.test('chat completion → messages answer for a messages client', async (t) => {
  t.strictSame(messageOf(openaiCompletion(), 'test/gpt'), {
    id: 'msg_chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG',
    type: 'message',
    role: 'assistant',
    model: 'test/gpt',
    content: [
      { type: 'thinking', thinking: 'Hmm.', signature: 'c2ln' },
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'call_abc', name: 'get_weather', input: { city: 'Paris' } },
      // failure modes 4 and 14: "" arguments are {}, the id is sanitized
      { type: 'tool_use', id: 'functions_get_time_1', name: 'get_time', input: {} },
    ],
    stop_reason: 'tool_use',
    stop_sequence: null,
    // failure mode 9: cached tokens are not billed as plain input
    usage: { input_tokens: 93, output_tokens: 46, cache_read_input_tokens: 1024, cache_creation_input_tokens: 0 },
  });
});

t.test('reasoning_content without details becomes an unsigned thinking block; malformed arguments an empty input', async (t) => {
  const out = messageOf(
    openaiCompletion({}, { reasoning_details: undefined, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{not json' } }] }),
    'm',
  );
  t.strictSame(out.content, [
    { type: 'thinking', thinking: 'Hmm.', signature: '' },
    { type: 'text', text: 'Checking.' },
    { type: 'tool_use', id: 'c', name: 'f', input: {} },
  ]);
});

t.test('failure mode 7: finish_reason → stop_reason; tool calls make a tool_use turn; refusal text kept', async (t) => {
  const cases: [string, string][] = [
    ['stop', 'end_turn'],
    ['length', 'max_tokens'],
    ['content_filter', 'refusal'],
    ['tool_calls', 'tool_use'],
  ];
  for (const [finish, stop] of cases) {
    const c = openaiCompletion();
    c.choices[0].finish_reason = finish;
    delete (c.choices[0].message as any).tool_calls;
    t.equal(messageOf(c, 'm').stop_reason, stop, finish);
  }
  const c = openaiCompletion();
  c.choices[0].finish_reason = 'stop';
  t.equal(messageOf(c, 'm').stop_reason, 'tool_use', 'tool calls reported with stop');
  const refused = messageOf(openaiCompletion({}, { content: null, refusal: 'I cannot help.', tool_calls: undefined, reasoning_details: undefined, reasoning_content: undefined }), 'm');
  t.strictSame(refused.content, [{ type: 'text', text: 'I cannot help.' }]);
});

t.test('failure mode 6: reasoning and tool calls round-trip through a client of the other format unchanged', async (t) => {
  // messages upstream → chat client → back to a messages upstream
  const chat = chatCompletionOf(anthropicMessage(), 'test/claude', 0);
  const next = chatToMessagesRequest(
    {
      model: 'test/claude',
      messages: [
        { role: 'user', content: 'Weather?' },
        chat.choices[0].message,
        { role: 'tool', tool_call_id: 'toolu_01A', content: 'Sunny' },
        { role: 'tool', tool_call_id: 'toolu_01B', content: 'Noon' },
      ],
    },
    { defaultMaxTokens: 1000, stream: false },
  );
  const [thinking, redacted, , , ...toolUses] = anthropicMessage().content;
  t.strictSame(next.messages[1].content, [thinking, redacted, { type: 'text', text: 'I will check both.' }, ...toolUses]);
  // chat upstream → messages client → back to a chat upstream
  const msg = messageOf(openaiCompletion(), 'test/gpt');
  const back = messagesToChatRequest({ model: 'test/gpt', max_tokens: 100, messages: [{ role: 'user', content: 'x' }, msg] }, { stream: false });
  t.strictSame(back.messages[1].reasoning_details, [{ type: 'thinking', thinking: 'Hmm.', signature: 'c2ln' }]);
  t.equal(back.messages[1].reasoning_content, 'Hmm.');
});
