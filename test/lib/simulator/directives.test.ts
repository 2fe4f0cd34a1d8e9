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
  t.match(defaults, { words: 12, tools: 0, cacheRead: 0, cacheWrite: 0, delayMs: 0, status: 503, after: 2, ms: 60_000, interleave: false });
  t.equal(defaults.fault, undefined);
  t.equal(defaults.thinking, undefined, 'thinking follows the request unless a directive says');
  t.equal(settingsFor([{ fault: 'error_after_200' }], 'm').after, 0, 'error_after_200 defaults to after=0');
  t.equal(settingsFor([{ words: '3' }, { words: '5' }], 'm').words, 5);
  const scoped: Directive[] = [{ model: 'a', fault: 'status' }, { model: 'b', words: '1' }];
  t.equal(settingsFor(scoped, 'a').fault, 'status');
  t.equal(settingsFor(scoped, 'a').words, 12);
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
  const text = readRequestText({ system: [{ type: 'text', text: '<<sim words=2>>' }], messages: [{ role: 'user', content: '<<sim tools=1>>' }] }, 'messages');
  t.same(text.directives, [{ words: '2' }, { tools: '1' }], 'directives from the system prompt and the messages, in order');
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
