import t from 'tap';
import { OutputText } from '../../../plugins/metering/output-text.js';
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
