// The estimator's remembered counts: found by a sampled fingerprint, but a count is only ever
// returned for the very text it was counted for, whatever shares its fingerprint.
import t from 'tap';
import { TEXT_READING, fingerprint, TextCounts } from '../../lib/text-counts.js';
import { bpeCharsTokenized, countTextTokens, estimateInputTokens } from '../../lib/tokens.js';

const LONG = 'The quick brown fox jumps over the lazy dog. '.repeat(40);
/** A copy that is another string object, as each request's JSON.parse makes. */
const fresh = (s: string) => JSON.parse(JSON.stringify(s)) as string;

t.test('a text is found again by its content, not its string object', async (t) => {
  const counts = new TextCounts(1e6, fingerprint);
  counts.set(LONG, 7);
  t.equal(counts.get(fresh(LONG)), 7);
  t.equal(counts.get(LONG.slice(1) + 'x'), undefined, 'another text of the same length');
  t.equal(counts.get(LONG + ' '), undefined);
});

t.test('texts sharing a fingerprint keep their own counts', async (t) => {
  const counts = new TextCounts(1e6, () => 1); // every text collides
  const texts = [0, 1, 2, 3, 4].map((i) => LONG.slice(0, 500) + String(i) + LONG.slice(501));
  texts.forEach((text, i) => counts.set(text, 100 + i));
  for (let i = 0; i < 5; i++) t.equal(counts.get(fresh(texts[i])), 100 + i, `text ${i}`);
  t.equal(counts.get(LONG), undefined, 'a text never counted');
  counts.set(texts[2], 42);
  t.equal(counts.get(texts[2]), 42, 'counting a text again replaces its count');
  t.equal(counts.get(texts[0]), 100, 'the first text keeps its count');
  t.equal(counts.get(texts[1]), 101, '…and so do the others');
});

t.test('texts made from one template are counted once, however many share a fingerprint', async (t) => {
  // Tool definitions of one length that differ in a digit: 64 samples almost never see it.
  const tool = (i: number) => ({ type: 'function', function: { name: `tool_${i}`, description: 'Does something useful for the agent. '.repeat(40) } });
  const body = () => ({ messages: [], tools: Array.from({ length: 10 }, (_, i) => tool(i)) });
  const first = estimateInputTokens(body(), 'chat');
  const before = bpeCharsTokenized();
  t.equal(estimateInputTokens(body(), 'chat'), first);
  t.equal(bpeCharsTokenized() - before, 0, 'nothing counted again');
});

t.test('the fingerprint depends on the length and on characters across the text', async (t) => {
  t.not(fingerprint(LONG), fingerprint(LONG + ' '));
  // Texts of one length whose every character differs (no sampled position can agree).
  t.not(fingerprint('a'.repeat(1000)), fingerprint('b'.repeat(1000)));
  const sameEverywhere = 'ab'.repeat(500);
  t.equal(fingerprint(sameEverywhere), fingerprint(fresh(sameEverywhere)));
  // Short texts are sampled too (one character in 16): same length and head, the rest differing.
  const head = 'x'.repeat(48);
  for (const length of [64, 300, 1000]) {
    t.not(fingerprint(head + 'a'.repeat(length - 48)), fingerprint(head + 'b'.repeat(length - 48)), `${length} characters`);
  }
  // Conversation texts: a shorter head, fewer samples, the same discernment of texts that differ across.
  const text = (s: string) => fingerprint(s, TEXT_READING);
  t.not(text(LONG), text(LONG + ' '));
  t.not(text('a'.repeat(1000)), text('b'.repeat(1000)));
  t.equal(text(sameEverywhere), text(fresh(sameEverywhere)));
  for (const length of [64, 300, 1000]) {
    t.not(text(head.slice(0, 8) + 'a'.repeat(length - 8)), text(head.slice(0, 8) + 'b'.repeat(length - 8)), `${length} characters, read as a conversation text`);
  }
});

t.test('the estimate of a text differing in one character from a remembered one is its own count', async (t) => {
  const text = 'lorem ipsum dolor sit amet '.repeat(1500); // 40,500 characters: 64 samples almost surely miss the edit
  const mid = text.length / 2 + 1;
  const joined = text.slice(0, mid) + 'Q' + text.slice(mid + 1); // one character changed: another count
  t.not(countTextTokens(joined), countTextTokens(text), 'the edit changes the count');
  const est = (s: string) => estimateInputTokens({ messages: [{ role: 'user', content: s }] }, 'chat');
  const first = est(text);
  t.equal(est(fresh(text)), first, 'the same text again');
  const edited = est(joined);
  t.equal(edited, Math.ceil(countTextTokens(joined) * 1.25) + 4, 'the edited text, counted for itself');
  t.equal(est(fresh(text)), first, 'the first text again');
});
