import t from 'tap';
import { OutputText, TOOL_CALL_TOKENS } from '../../../plugins/metering/output-text.js';
import { textDeltas, type Answer } from '../../../lib/simulator/answer.js';
import { countTextTokens } from '../../../lib/tokens.js';

t.test('short text is counted exactly; ignores non-strings', async (t) => {
  const o = new OutputText();
  t.equal(o.tokens(), 0);
  o.add('Hello, ');
  o.add(undefined);
  o.add(42);
  o.add('world of tokens.');
  t.equal(o.tokens(), countTextTokens('Hello, world of tokens.'));
});

t.test('long text is estimated from a bounded sample, within a few percent', async (t) => {
  const words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'theta', 'lambda'];
  const pieces = Array.from({ length: 60_000 }, (_, i) => words[i % words.length] + (i % 13 === 0 ? '. ' : ' '));
  const o = new OutputText();
  for (const p of pieces) o.add(p);
  const exact = countTextTokens(pieces.join(''));
  const est = o.tokens();
  t.ok(Math.abs(est - exact) / exact < 0.03, `estimate ${est} vs exact ${exact}`);
});

t.test('the simulator\'s answers (1 word = 1 token) are estimated exactly when it reports no usage', async (t) => {
  for (const words of [1, 12, 100, 5000]) {
    const o = new OutputText();
    for (const d of textDeltas({ seed: 0x1234567, textWords: words, settings: {} } as Answer)) o.add(d);
    t.equal(o.tokens(), words, `${words} words`);
  }
});

t.test('a tool call costs its name and its framing besides its arguments', async (t) => {
  const o = new OutputText();
  o.addToolCall('get_weather');
  o.add('{"city":"Paris"}');
  t.equal(o.tokens(), TOOL_CALL_TOKENS + countTextTokens('get_weather{"city":"Paris"}'));
});
