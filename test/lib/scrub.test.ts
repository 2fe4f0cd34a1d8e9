import t from 'tap';
import { Scrubber } from '../../lib/scrub.js';

const KEY = 'sk-ant-api03-Zq7Xv2Lm9Pw4Rt6Yu8Io1As3Df5Gh0Jk';

t.test('a known secret is removed whole and as any fragment of 12 characters or more', async (t) => {
  const s = new Scrubber([KEY, undefined, '']);
  t.equal(s.scrub(`key was ${KEY}.`), 'key was [redacted].');
  t.equal(s.scrub(`ends in ${KEY.slice(-12)} ok`), 'ends in [redacted] ok');
  t.equal(s.scrub(`mid ${KEY.slice(20, 33)} ok`), 'mid [redacted] ok');
  t.equal(s.scrub(`two ${KEY} and ${KEY}`), 'two [redacted] and [redacted]');
  t.equal(s.scrub('nothing secret here'), 'nothing secret here');
});

t.test('short known secrets are removed where they appear whole', async (t) => {
  t.equal(new Scrubber(['key-p1']).scrub('the key key-p1 is unknown'), 'the key [redacted] is unknown');
});

t.test('secret-shaped text is removed whoever it belongs to', async (t) => {
  const s = new Scrubber([]);
  const cases: [string, string][] = [
    ['Authorization: Bearer abc.def-ghi_123456', 'Authorization: [redacted]'],
    ['{"x-api-key":"whatever-value"}', '{"x-api-key":"[redacted]"}'],
    ['api_key=12345678', 'api_key=[redacted]'],
    ['token bearer ABCDEFGH12345678 used', 'token [redacted] used'],
    ['Incorrect API key provided: sk-proj-abc****wxyz.', 'Incorrect API key provided: [redacted]'],
    ['AKIAABCDEFGHIJKLMNOP', '[redacted]'],
    ['ghp_abcdefghijklmnopqrstuvwxyz0123456789', '[redacted]'],
    ['eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig', '[redacted]'],
  ];
  for (const [input, want] of cases) t.equal(s.scrub(input), want, input);
  t.equal(s.scrub('max_tokens: 64000 > 32000, the maximum allowed'), 'max_tokens: 64000 > 32000, the maximum allowed', 'ordinary messages pass');
});
