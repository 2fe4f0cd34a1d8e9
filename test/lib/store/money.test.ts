import t from 'tap';
import { formatUsd, formatUsdPerMillion, parseUsd, parseUsdPerMillion } from '../../../lib/store/money.js';

t.test('USD decimals parse to exact nano-USD', async (t) => {
  t.equal(parseUsd('0.1'), 100_000_000);
  t.equal(parseUsd('0.3'), 300_000_000, 'no float drift (0.1 + 0.2 style)');
  t.equal(parseUsd('12.345678901'), 12_345_678_901);
  t.equal(parseUsd(' 7 '), 7_000_000_000);
  t.equal(parseUsd('9007199.254740991'), Number.MAX_SAFE_INTEGER);
  for (const bad of ['', '-1', '1e3', '1.2345678901', 'abc', '.5', '1.', '9007199.254740992', '0x10']) {
    t.throws(() => parseUsd(bad), RangeError, `"${bad}" refused`);
  }
});

t.test('prices per million tokens convert to integer nano-USD per token', async (t) => {
  t.equal(parseUsdPerMillion('3'), 3000);
  t.equal(parseUsdPerMillion('0.075'), 75);
  t.throws(() => parseUsdPerMillion('0.0001'), /more than 3 decimals/);
  t.equal(formatUsdPerMillion(3000), '3');
  t.equal(formatUsdPerMillion(75), '0.075');
});

t.test('nano-USD formats as dollars', async (t) => {
  t.equal(formatUsd(0), '$0.00');
  t.equal(formatUsd(5_000_000_000), '$5.00');
  t.equal(formatUsd(1_234_567), '$0.001234567');
  t.equal(formatUsd(12_500_000_000), '$12.50');
  t.equal(formatUsd(-250_000_000), '-$0.25');
});
