// Directive parsing, settings merging, input token counting and the lazy text of `bytes=` answers.
import t from 'tap';
import { parseDirectives, simulatedInputTokens, type Directive } from '../../../lib/simulator/index.js';
import { settingsFor } from '../../../lib/simulator/directives.js';
import { readRequestText } from '../../../lib/simulator/request-text.js';
import { planAnswer, textDeltas } from '../../../lib/simulator/answer.js';
import { messagesEvents } from '../../../lib/simulator/messages-wire.js';
import { GatewayError } from '../../../lib/errors.js';

t.test('parseDirectives finds every directive with its key=value pairs', async (t) => {
  t.same(parseDirectives('no directives here'), []);
  t.same(parseDirectives('a <<sim words=3 fault=status status=429>> b <<sim model=x tools=2>>'), [
    { words: '3', fault: 'status', status: '429' },
    { model: 'x', tools: '2' },
  ]);
  t.same(parseDirectives('<<sim  bare words=1 >>'), [{ words: '1' }], 'bare words are ignored');
  t.same(parseDirectives('<<simulate words=1>>'), [], 'only the exact marker');
});

t.test('settingsFor: defaults, later directives win, model scoping', async (t) => {
  const defaults = settingsFor([], 'm');
  t.match(defaults, { tools: 0, cacheRead: 0, cacheWrite: 0, delayMs: 0, status: 503, after: 2, ms: 60_000, interleave: false });
  t.equal(defaults.fault, undefined);
  t.equal(defaults.words, undefined, 'the answer decides the default length (none beside a forced tool call)');
  t.equal(defaults.thinking, undefined, 'thinking follows the request unless a directive says');
  t.equal(settingsFor([{ fault: 'error_after_200' }], 'm').after, 0, 'error_after_200 defaults to after=0');
  t.equal(settingsFor([{ words: '3' }, { words: '5' }], 'm').words, 5);
  const scoped: Directive[] = [{ model: 'a', fault: 'status' }, { model: 'b', words: '1' }];
  t.equal(settingsFor(scoped, 'a').fault, 'status');
  t.equal(settingsFor(scoped, 'a').words, undefined);
  t.equal(settingsFor(scoped, 'b').fault, undefined);
  t.equal(settingsFor(scoped, 'b').words, 1);
  t.equal(settingsFor([{ thinking: '0' }], 'm').thinking, false);
});

t.test('settingsFor refuses typos with a 400', async (t) => {
  const typos: Directive[] = [{ wrods: '1' }, { words: 'many' }, { stop: 'halt' }, { fault: 'explode' }, { words: '-1' }];
  for (const d of typos) {
    t.throws(() => settingsFor([d], 'm'), GatewayError, JSON.stringify(d));
  }
  t.doesNotThrow(() => settingsFor([{ model: 'other', wrods: '1' }], 'm'), 'a directive for another model is not checked');
});

t.test('simulatedInputTokens counts text, tool calls, tool results and tool definitions, not images', async (t) => {
  const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }];
  const chat = {
    messages: [
      { role: 'system', content: 'sys' },
      { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
      { role: 'tool', tool_call_id: 'c', content: 'result' },
    ],
    tools,
  };
  t.equal(simulatedInputTokens(chat, 'chat'), Math.ceil(('sys' + 'look' + '{"a":1}' + 'result' + JSON.stringify(tools)).length / 4));
  t.equal(simulatedInputTokens({ messages: [{ role: 'user', content: 'abcde' }] }, 'messages'), 2, 'rounded up');
  t.equal(simulatedInputTokens({}, 'chat'), 0);
});

t.test('directives come from the last user turn only: its text, not tool results, not the system prompt', async (t) => {
  const directives = (body: object, format: 'chat' | 'messages') => readRequestText(body, format).directives;
  const call = { id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } };
  t.same(directives({ messages: [{ role: 'user', content: 'a <<sim words=2>> b <<sim tools=1>>' }] }, 'chat'), [{ words: '2' }, { tools: '1' }], 'in order');
  t.same(
    directives({ system: '<<sim words=1>>', messages: [{ role: 'user', content: [{ type: 'text', text: '<<sim tools=1>>' }] }] }, 'messages'),
    [{ tools: '1' }],
    'not the system prompt (it is sent on every turn)',
  );
  t.same(directives({ messages: [{ role: 'system', content: '<<sim words=1>>' }, { role: 'user', content: 'hi' }] }, 'chat'), [], 'nor a chat system message');
  t.same(
    directives({ messages: [{ role: 'user', content: 'first <<sim tools=2>>' }, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'second <<sim words=3>>' }] }, 'chat'),
    [{ words: '3' }],
    'an earlier turn does not stick',
  );
  t.same(
    directives({ messages: [{ role: 'user', content: 'go <<sim tools=1>>' }, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: 'c1', content: 'echo: go <<sim tools=1>>' }] }, 'chat'),
    [],
    'a turn of tool results has none, even when a result echoes one',
  );
  t.same(
    directives({ messages: [{ role: 'user', content: 'go' }, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: 'c1', content: 'r' }, { role: 'user', content: 'again <<sim tools=1>>' }] }, 'chat'),
    [{ tools: '1' }],
    'a user message beside the tool results carries them',
  );
  const messagesTurn = [
    { role: 'user', content: 'go <<sim tools=1>>' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'f', input: {} }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: '<<sim words=9>>' }] }, { type: 'text', text: '<<sim words=4>>' }] },
  ];
  t.same(directives({ messages: messagesTurn }, 'messages'), [{ words: '4' }], 'messages: text blocks of the turn, not tool_result content');
  t.same(
    directives({ messages: [{ role: 'user', content: 'go <<sim words=5>>' }, { role: 'assistant', content: 'The answer is' }] }, 'messages'),
    [{ words: '5' }],
    'a final assistant message (a prefill) belongs to the turn it continues',
  );
  const all = readRequestText({ messages: messagesTurn }, 'messages');
  t.equal(all.chars, 'go <<sim tools=1>>'.length + '{}'.length + '<<sim words=9>>'.length + '<<sim words=4>>'.length, 'every text still counts as input');
});

t.test('a bytes= answer is generated lazily', async (t) => {
  const body = { model: 'm', max_tokens: 40_000_000, messages: [{ role: 'user', content: 'x' }] };
  const settings = settingsFor([{ bytes: '40000000' }], 'm');
  const heapBefore = process.memoryUsage().heapUsed;
  const answer = planAnswer(body, 'messages', readRequestText(body, 'messages'), settings, 1);
  t.ok(answer.textWords > 4_000_000, 'a 40 MB answer is planned');
  const events = messagesEvents(answer);
  const firstFive = Array.from({ length: 5 }, () => events.next().value as string);
  t.match(firstFive[4], /"text_delta"/);
  const first = textDeltas(answer).next().value as string;
  t.ok(first.length >= 1024 && first.length < 1100);
  t.ok(process.memoryUsage().heapUsed - heapBefore < 20_000_000, 'without holding the text');
});
