// tool_choice on both wires, as the vendors honour it: a forced choice calls (the named tool), "none"
// never calls, "auto" calls only when a directive asks; a turn of tool results gets a text answer
// unless the choice forces another call; arguments validate against the tool's schema.
import t from 'tap';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startSimulator } from '../../../lib/simulator/index.js';
import { errorWith } from '../../helpers/error-pattern.js';
import { schemaErrors } from '../../helpers/json-schema.js';

const KEY = 'sk-upstream-tools';
const sim = await startSimulator({ apiKey: KEY });
t.teardown(() => sim.close());
const openai = new OpenAI({ baseURL: sim.url + '/v1', apiKey: KEY, maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: sim.url, apiKey: KEY, maxRetries: 0 });

const bookingSchema = {
  type: 'object',
  properties: {
    guest: { type: 'object', properties: { name: { type: 'string', minLength: 2 }, email: { type: 'string', format: 'email' } }, required: ['name', 'email'] },
    nights: { type: 'integer', minimum: 1, maximum: 14 },
    arrival: { type: 'string', format: 'date' },
    room: { enum: ['single', 'double', 'suite'] },
    extras: { type: 'array', items: { type: 'object', properties: { kind: { type: 'string' }, price: { type: 'number', exclusiveMinimum: 0 } }, required: ['kind', 'price'] }, minItems: 2 },
    note: { type: ['string', 'null'] },
  },
  required: ['guest', 'nights', 'arrival', 'room', 'extras'],
};
const chatTools: OpenAI.ChatCompletionFunctionTool[] = [
  { type: 'function', function: { name: 'book_room', parameters: bookingSchema } },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
];
const messagesTools: Anthropic.Tool[] = [
  { name: 'book_room', input_schema: bookingSchema as Anthropic.Tool.InputSchema },
  { name: 'get_time', input_schema: { type: 'object', properties: {} } },
];
const schemaOf = (name: string) => (name === 'book_room' ? bookingSchema : { type: 'object', properties: {} });

type ChatCall = { name: string; arguments: string };
const chatCalls = (m: OpenAI.ChatCompletionMessage): ChatCall[] =>
  (m.tool_calls ?? []).map((c) => (c.type === 'function' ? { name: c.function.name, arguments: c.function.arguments } : { name: '', arguments: '' }));

/** Non-stream and stream, the same request: both answers, the stream's assembled by the SDK. */
async function chatBoth(body: OpenAI.ChatCompletionCreateParamsNonStreaming) {
  const whole = await openai.chat.completions.create(body);
  const streamed = await openai.chat.completions.stream({ ...body, stream: true }).finalChatCompletion();
  return [whole, streamed] as const;
}
async function messagesBoth(body: Anthropic.MessageCreateParamsNonStreaming) {
  const whole = await anthropic.messages.create(body);
  const streamed = await anthropic.messages.stream(body).finalMessage();
  return [whole, streamed] as const;
}

t.test('chat: tool_choice "required" calls a tool whose arguments validate, with no text', async (t) => {
  for (const res of await chatBoth({ model: 'm', messages: [{ role: 'user', content: 'Book me a room' }], tools: chatTools, tool_choice: 'required' })) {
    const choice = res.choices[0];
    t.equal(choice.finish_reason, 'tool_calls');
    // null; the stream's first chunk carries content "" (as OpenAI's does), which openai 7 keeps and 6 dropped.
    t.ok(choice.message.content === null || choice.message.content === '', 'no text beside a forced call');
    const calls = chatCalls(choice.message);
    t.same(calls.map((c) => c.name), ['book_room'], 'one call, of the first tool');
    t.equal(schemaErrors(bookingSchema, JSON.parse(calls[0].arguments)), undefined, `arguments validate: ${calls[0].arguments}`);
  }
});

t.test('chat: tools=N makes parallel calls across the tools; parallel_tool_calls false makes one', async (t) => {
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Do both <<sim tools=3>>' }];
  for (const res of await chatBoth({ model: 'm', messages, tools: chatTools, tool_choice: 'required' })) {
    const calls = chatCalls(res.choices[0].message);
    t.same(calls.map((c) => c.name), ['book_room', 'get_time', 'book_room']);
    for (const c of calls) t.equal(schemaErrors(schemaOf(c.name), JSON.parse(c.arguments || '{}')), undefined, c.name);
  }
  for (const res of await chatBoth({ model: 'm', messages, tools: chatTools, tool_choice: 'required', parallel_tool_calls: false })) {
    t.same(chatCalls(res.choices[0].message).map((c) => c.name), ['book_room']);
  }
});

t.test('chat: a named function is the one called; "none" never calls; words= adds text', async (t) => {
  const named = { type: 'function' as const, function: { name: 'get_time' } };
  for (const res of await chatBoth({ model: 'm', messages: [{ role: 'user', content: 'Time <<sim tools=2>>' }], tools: chatTools, tool_choice: named })) {
    t.same(chatCalls(res.choices[0].message).map((c) => c.name), ['get_time', 'get_time']);
  }
  for (const res of await chatBoth({ model: 'm', messages: [{ role: 'user', content: 'Time <<sim tools=2>>' }], tools: chatTools, tool_choice: 'none' })) {
    t.equal(res.choices[0].finish_reason, 'stop');
    t.equal(res.choices[0].message.tool_calls?.length ?? 0, 0, '"none": no call even when a directive asks');
    t.equal(res.choices[0].message.content?.split(' ').length, 12);
  }
  const [res] = await chatBoth({ model: 'm', messages: [{ role: 'user', content: 'Time <<sim words=3>>' }], tools: chatTools, tool_choice: named });
  t.equal(res.choices[0].message.content?.split(' ').length, 3, 'words= asks for text before the call');
  t.equal(chatCalls(res.choices[0].message).length, 1);
  const [auto] = await chatBoth({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], tools: chatTools, tool_choice: 'auto' });
  t.equal(auto.choices[0].finish_reason, 'stop', '"auto" without a directive answers in text');
});

t.test('chat: after tool results, a text answer unless the choice forces another call', async (t) => {
  const question: OpenAI.ChatCompletionMessageParam = { role: 'user', content: 'Book it <<sim tools=2>>' };
  const first = await openai.chat.completions.create({ model: 'm', messages: [question], tools: chatTools });
  const assistant = first.choices[0].message;
  t.equal(chatCalls(assistant).length, 2);
  const results: OpenAI.ChatCompletionMessageParam[] = (assistant.tool_calls ?? []).map((c) => ({ role: 'tool', tool_call_id: c.id, content: 'done' }));
  const history: OpenAI.ChatCompletionMessageParam[] = [question, assistant, ...results];
  for (const res of await chatBoth({ model: 'm', messages: history, tools: chatTools })) {
    t.equal(res.choices[0].finish_reason, 'stop', 'the loop ends: the directive was for the first turn');
    t.ok(res.choices[0].message.content);
  }
  for (const res of await chatBoth({ model: 'm', messages: history, tools: chatTools, tool_choice: 'required' })) {
    t.equal(res.choices[0].finish_reason, 'tool_calls', 'a forced choice calls again, as the vendor does');
  }
  const more = await openai.chat.completions.create({ model: 'm', messages: [...history, { role: 'user', content: 'again <<sim tools=1>>' }], tools: chatTools });
  t.equal(more.choices[0].finish_reason, 'tool_calls', 'a directive in this turn asks for another call');
});

t.test('chat: the vendor refuses a choice that cannot be honoured', async (t) => {
  const user: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'x' }];
  await t.rejects(openai.chat.completions.create({ model: 'm', messages: user, tool_choice: 'required' }), errorWith({ status: 400, param: 'tool_choice', message: /only allowed when 'tools' are specified/ }));
  await t.rejects(
    openai.chat.completions.create({ model: 'm', messages: user, tools: chatTools, tool_choice: { type: 'function', function: { name: 'nope' } } }),
    errorWith({ status: 400, param: 'tool_choice', message: /nope/ }),
  );
  const loose = { type: 'function' as const, function: { name: 'f', strict: true, parameters: { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false } } };
  await t.rejects(openai.chat.completions.create({ model: 'm', messages: user, tools: [loose] }), errorWith({ status: 400, param: 'tools[0].function.parameters', message: /Missing 'a'/ }));
  const strict = { ...loose, function: { ...loose.function, parameters: { ...loose.function.parameters, required: ['a'] } } };
  const ok = await openai.chat.completions.create({ model: 'm', messages: user, tools: [strict], tool_choice: 'required' });
  t.same(chatCalls(ok.choices[0].message), [{ name: 'f', arguments: '{"a":"value-a"}' }], 'a strict tool that follows the rules');
});

t.test('messages: tool_choice any calls a tool whose input validates, with no text', async (t) => {
  for (const msg of await messagesBoth({ model: 'm', max_tokens: 500, messages: [{ role: 'user', content: 'Book me a room' }], tools: messagesTools, tool_choice: { type: 'any' } })) {
    t.equal(msg.stop_reason, 'tool_use');
    t.same(msg.content.map((b) => b.type), ['tool_use'], 'no text beside a forced call');
    const use = msg.content[0] as Anthropic.ToolUseBlock;
    t.equal(use.name, 'book_room');
    t.equal(schemaErrors(bookingSchema, use.input), undefined, `input validates: ${JSON.stringify(use.input)}`);
  }
});

t.test('messages: a named tool, disable_parallel_tool_use, "none"', async (t) => {
  const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Go <<sim tools=3>>' }];
  for (const msg of await messagesBoth({ model: 'm', max_tokens: 500, messages, tools: messagesTools, tool_choice: { type: 'tool', name: 'get_time' } })) {
    t.same(msg.content.map((b) => (b.type === 'tool_use' ? b.name : b.type)), ['get_time', 'get_time', 'get_time']);
  }
  for (const msg of await messagesBoth({ model: 'm', max_tokens: 500, messages, tools: messagesTools, tool_choice: { type: 'any', disable_parallel_tool_use: true } })) {
    t.same(msg.content.map((b) => b.type), ['tool_use'], 'one call only');
  }
  for (const msg of await messagesBoth({ model: 'm', max_tokens: 500, messages, tools: messagesTools, tool_choice: { type: 'auto', disable_parallel_tool_use: true } })) {
    t.same(msg.content.map((b) => b.type), ['text', 'tool_use'], 'auto: text and one call');
  }
  for (const msg of await messagesBoth({ model: 'm', max_tokens: 500, messages, tools: messagesTools, tool_choice: { type: 'none' } })) {
    t.equal(msg.stop_reason, 'end_turn');
    t.same(msg.content.map((b) => b.type), ['text'], '"none": no call even when a directive asks');
  }
});

t.test('messages: after tool results, a text answer unless the choice forces another call', async (t) => {
  const question: Anthropic.MessageParam = { role: 'user', content: 'Book it <<sim tools=2>>' };
  const first = await anthropic.messages.create({ model: 'm', max_tokens: 500, messages: [question], tools: messagesTools });
  const uses = first.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
  t.equal(uses.length, 2);
  const history: Anthropic.MessageParam[] = [
    question,
    { role: 'assistant', content: first.content },
    { role: 'user', content: uses.map((u) => ({ type: 'tool_result' as const, tool_use_id: u.id, content: 'done <<sim tools=2>>' })) },
  ];
  for (const msg of await messagesBoth({ model: 'm', max_tokens: 500, messages: history, tools: messagesTools })) {
    t.equal(msg.stop_reason, 'end_turn', 'the loop ends: directives in tool results do not count');
    t.same(msg.content.map((b) => b.type), ['text']);
  }
  for (const msg of await messagesBoth({ model: 'm', max_tokens: 500, messages: history, tools: messagesTools, tool_choice: { type: 'any' } })) {
    t.equal(msg.stop_reason, 'tool_use', 'a forced choice calls again, as the vendor does');
  }
});

t.test('messages: the vendor refuses a choice that cannot be honoured', async (t) => {
  const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'x' }];
  await t.rejects(
    anthropic.messages.create({ model: 'm', max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 }, messages, tools: messagesTools, tool_choice: { type: 'any' } }),
    errorWith({ status: 400, message: /Thinking may not be enabled when tool_choice forces tool use/ }),
  );
  await t.rejects(anthropic.messages.create({ model: 'm', max_tokens: 20, messages, tools: messagesTools, tool_choice: { type: 'tool', name: 'nope' } }), errorWith({ status: 400, message: /nope/ }));
  await t.rejects(anthropic.messages.create({ model: 'm', max_tokens: 20, messages, tool_choice: { type: 'any' } }), errorWith({ status: 400, message: /requires tools/ }));
  const thinkingAuto = await anthropic.messages.create({ model: 'm', max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 }, messages, tools: messagesTools, tool_choice: { type: 'auto' } });
  t.equal(thinkingAuto.stop_reason, 'end_turn', 'thinking with tool_choice auto is fine');
});

t.test('a tool call that does not fit the output budget stops at max_tokens', async (t) => {
  const msg = await anthropic.messages.create({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }], tools: messagesTools, tool_choice: { type: 'tool', name: 'book_room' } });
  t.equal(msg.stop_reason, 'max_tokens');
  t.same(msg.content, []);
});
