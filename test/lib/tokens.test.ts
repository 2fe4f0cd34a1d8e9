// Input-token estimates: an upper bound over the text a request carries (the module's BPE count
// × 1.25, plus a per-message overhead and a fixed size per image), never counting base64 data or
// structural keys. The BPE reference is the module's own countTextTokens, so these tests hold
// whichever encoding lib/tokens.ts uses; one test checks the bound against o200k.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { countTokens as o200k } from 'gpt-tokenizer';
import { countTokens as r50k } from 'gpt-tokenizer/encoding/r50k_base';
import { BPE_MAX_CHARS, BPE_SAMPLE_CHARS, bpeCharsTokenized, countTextTokens, estimateInput, estimateInputTokens, PDF_PAGE_TOKENS, pdfFilesScanned } from '../../lib/tokens.js';
import { buildPdf } from '../helpers/pdf.js';
import { clientToolTexts } from '../../lib/upstream-payload.js';

const SAFETY = 1.25;
const PER_MESSAGE = 4;
const PER_IMAGE = 1600;
/** The estimator counts each text piece on its own. */
const bpe = (...parts: string[]) => parts.reduce((n, p) => n + countTextTokens(p), 0);
const LONG = 'The quick brown fox jumps over the lazy dog. '.repeat(40);
const BASE64 = 'iVBORw0KGgoAAAANSUhEUgAA'.repeat(5000);

t.test('an empty body is zero', async (t) => {
  t.equal(estimateInputTokens({}, 'chat'), 0);
  t.equal(estimateInputTokens({ messages: [] }, 'messages'), 0);
});

t.test('plain text: BPE count with the safety margin, plus the per-message overhead', async (t) => {
  const body = { messages: [{ role: 'user', content: LONG }] };
  const est = estimateInputTokens(body, 'chat');
  t.equal(est, Math.ceil(bpe(LONG) * SAFETY) + PER_MESSAGE);
  t.ok(est > bpe(LONG), 'above the plain BPE count');
  t.ok(est >= o200k(LONG) * SAFETY, 'at least 1.25 × the o200k count');
});

t.test('system, several messages and content blocks are all counted', async (t) => {
  const body = {
    system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'Hello there' }] },
      { role: 'assistant', content: 'General Kenobi' },
      { role: 'user', content: 'Go on' },
    ],
  };
  t.equal(estimateInputTokens(body, 'messages'), Math.ceil(bpe('You are terse.', 'Hello there', 'General Kenobi', 'Go on') * SAFETY) + 3 * PER_MESSAGE);
  t.equal(estimateInputTokens({ system: 'Be kind', messages: [{ role: 'user', content: 'hi' }] }, 'messages'), Math.ceil(bpe('Be kind', 'hi') * SAFETY) + PER_MESSAGE);
});

t.test('structural keys (role, type, ids, cache_control, signature) are not counted as text', async (t) => {
  const a = estimateInputTokens({ messages: [{ role: 'user', content: 'same text' }] }, 'chat');
  const b = estimateInputTokens({ messages: [{ role: 'assistant', content: 'same text' }] }, 'chat');
  t.equal(a, b, 'the role does not matter');
  const withIds = estimateInputTokens(
    {
      messages: [
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 'EqQBCkgIARABGAIiQL'.repeat(50) }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01ABCDEFGHIJKLMNOP', content: 'result' }] },
      ],
    },
    'messages',
  );
  t.equal(withIds, Math.ceil(bpe('hmm', 'result') * SAFETY) + 2 * PER_MESSAGE);
});

t.test('images cost a fixed amount; their base64 data is not text', async (t) => {
  const text = { type: 'text', text: 'What is this?' };
  const chat = estimateInputTokens({ messages: [{ role: 'user', content: [text, { type: 'image_url', image_url: { url: `data:image/png;base64,${BASE64}` } }] }] }, 'chat');
  t.equal(chat, Math.ceil(bpe('What is this?') * SAFETY) + PER_MESSAGE + PER_IMAGE, 'chat image_url part');
  const msgs = estimateInputTokens(
    { messages: [{ role: 'user', content: [text, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: BASE64 } }] }] },
    'messages',
  );
  t.equal(msgs, chat, 'messages image block: the same');
  const nested = estimateInputTokens(
    { messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: BASE64 } }] }] }] },
    'messages',
  );
  t.equal(nested, PER_MESSAGE + PER_IMAGE, 'an image inside a tool result');
});

t.test('tools are counted from their JSON', async (t) => {
  const tool = { type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };
  const without = estimateInputTokens({ messages: [{ role: 'user', content: 'hi' }] }, 'chat');
  const withTool = estimateInputTokens({ messages: [{ role: 'user', content: 'hi' }], tools: [tool] }, 'chat');
  t.equal(withTool, Math.ceil(bpe('hi', JSON.stringify(tool)) * SAFETY) + PER_MESSAGE);
  t.ok(withTool > without);
});

t.test("with the body's text, tools count the same, and a resent tool is not counted again", async (t) => {
  const tools = [0, 1, 2].map((i) => ({ type: 'function', function: { name: `tool_${i}`, description: 'Looks things up. '.repeat(20 + i), parameters: { type: 'object', properties: { q: { type: 'string' } } } } }));
  const body = { messages: [{ role: 'user', content: 'hi' }], tools };
  const expected = Math.ceil(bpe('hi', ...tools.map((x) => JSON.stringify(x))) * SAFETY) + PER_MESSAGE;
  // Spaced as some clients send it (Python's json.dumps): still counted as JSON.stringify writes each tool.
  for (const text of [JSON.stringify(body), JSON.stringify(body, null, 2)]) {
    t.equal(estimateInput(JSON.parse(text), 'chat', () => clientToolTexts({ bodyText: text })).tokens, expected, 'the first time');
    const before = bpeCharsTokenized();
    t.equal(estimateInput(JSON.parse(text), 'chat', () => clientToolTexts({ bodyText: text })).tokens, expected, 'resent');
    t.equal(bpeCharsTokenized() - before, 'hi'.length, 'only the short message was counted again');
  }
  // One tool edited: counted anew, the others remembered.
  const edited = { ...body, tools: [tools[0], { ...tools[1], function: { ...tools[1].function, description: 'Edited.' } }, tools[2]] };
  const text = JSON.stringify(edited);
  t.equal(estimateInput(JSON.parse(text), 'chat', () => clientToolTexts({ bodyText: text })).tokens, Math.ceil(bpe('hi', ...edited.tools.map((x) => JSON.stringify(x))) * SAFETY) + PER_MESSAGE);
  // A text whose tools are not the body's (another count of items): the body's own tools are counted.
  t.equal(estimateInput(body, 'chat', () => clientToolTexts({ bodyText: JSON.stringify({ tools: [tools[0]] }) })).tokens, expected);
});

t.test('tool calls in chat assistant messages are counted', async (t) => {
  const est = estimateInputTokens(
    { messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }] }] },
    'chat',
  );
  t.equal(est, Math.ceil(bpe('lookup', '{"q":"x"}') * SAFETY) + PER_MESSAGE);
});

t.test('monotonic: more text never lowers the estimate', async (t) => {
  let prev = -1;
  for (let n = 0; n <= 64; n += 8) {
    const est = estimateInputTokens({ messages: [{ role: 'user', content: 'word '.repeat(n) }] }, 'chat');
    t.ok(est >= prev, `${n} words: ${est} >= ${prev}`);
    prev = est;
  }
});

t.test('countTextTokens', async (t) => {
  t.equal(countTextTokens(''), 0);
  t.ok(countTextTokens('Hello, world!') > 0);
  const n = countTextTokens(LONG);
  t.ok(n > 100 && n < LONG.length, `a plausible count for ${LONG.length} characters: ${n}`);
});

/** Random text of `n` characters drawn from `alphabet`, with a space every `word` characters (0: none). */
function randomText(n: number, alphabet: string, word = 0): string {
  const chars = [...alphabet];
  let out = '';
  for (let i = 1; i <= n; i++) out += word && i % word === 0 ? ' ' : chars[Math.floor(Math.random() * chars.length)];
  return out;
}
const CJK = Array.from({ length: 2000 }, (_, i) => String.fromCharCode(0x4e00 + i * 7)).join('');
const LATIN_EXT = Array.from({ length: 1000 }, (_, i) => String.fromCharCode(0xc0 + i)).join('');
const LETTERS = 'abcdefghijklmnopqrstuvwxyz';
const SPACES = ' \t\n\u2003\u00a0';

t.test('below the budget the count is BPE over the whole text, exactly', async (t) => {
  // Windows end where the tokenizer's pre-split cuts anyway, so they add up to the whole count.
  const prose = LONG.repeat(40) + 'Done.\n\n  indented  line';
  t.ok(prose.length > 64 * 1024 && prose.length < BPE_MAX_CHARS);
  t.equal(countTextTokens(prose), r50k(prose));
  const words = randomText(50_000, LETTERS, 7);
  t.equal(countTextTokens(words), r50k(words));
});

t.test('special-token text is ordinary text, not an error', async (t) => {
  const text = 'ignore this <|endoftext|> and this <|fim_prefix|>';
  t.ok(countTextTokens(text) > 10);
  t.ok(estimateInputTokens({ messages: [{ role: 'user', content: text }] }, 'chat') > 10);
});

t.test('long runs (no spaces, or only spaces) are tokenized in slices: never under BPE over the run', async (t) => {
  for (const [name, run] of [
    ['CJK', CJK],
    ['accented letters', LATIN_EXT.repeat(2)],
    ['base64', Buffer.from(randomText(3000, LETTERS + '!?')).toString('base64')],
    ['spaces', randomText(2000, SPACES)],
    ['one letter', 'x'.repeat(2000)],
  ]) {
    const n = countTextTokens(`a ${run} b`);
    const whole = r50k(`a ${run} b`, { disallowedSpecial: new Set() });
    t.ok(n >= whole && n <= whole * 1.1 + 2, `${name}: ${n} vs ${whole}`);
  }
});

t.test('BPE work per request is bounded; the rest is counted from its UTF-8 length, above the BPE count', async (t) => {
  const cases: [string, string][] = [
    ['prose', LONG.repeat(20)],
    ['random words', randomText(60_000, LETTERS, 7)],
    ['CJK', randomText(20_000, CJK)],
    ['accented letters', randomText(30_000, LATIN_EXT, 9)],
    ['spaces', randomText(60_000, SPACES)],
  ];
  for (const [name, part] of cases) {
    // 40 parts of ~60 KB (each just under the old sampling threshold): ~2.4 MB of text.
    const parts = Array.from({ length: 40 }, (_, i) => `${i} ${part}`);
    const body = { messages: [{ role: 'user', content: parts.map((text) => ({ type: 'text', text })) }] };
    const before = bpeCharsTokenized();
    const est = estimateInputTokens(body, 'messages');
    const worked = bpeCharsTokenized() - before;
    t.ok(worked <= BPE_MAX_CHARS + 4096 + BPE_SAMPLE_CHARS, `${name}: BPE over ${worked} characters of ${parts.length * part.length}`);
    // The true count of one part times the parts (each part is the same text but for its number).
    const truth = parts.length * r50k(part, { disallowedSpecial: new Set() });
    t.ok(est >= truth, `${name}: estimate ${est} >= BPE ${truth}`);
    const bytes = Buffer.byteLength(parts.join(''));
    t.ok(est <= Math.ceil(bytes * SAFETY) + PER_MESSAGE, `${name}: estimate ${est} within the bound by length (${bytes} bytes)`);
  }
});

t.test('a long document past the budget is estimated near its count, not at one token per byte', async (t) => {
  const doc = LONG.repeat(Math.ceil(1_000_000 / LONG.length));
  const truth = r50k(doc);
  const est = estimateInputTokens({ messages: [{ role: 'user', content: doc }] }, 'messages');
  t.ok(est >= truth && est <= truth * 1.6, `estimate ${est} for ${truth} tokens (${Buffer.byteLength(doc)} bytes)`);
});

t.test('an image is one by its place as a content block: a tool input saying "image" is text', async (t) => {
  const input = { type: 'image', caption: LONG };
  const est = estimateInputTokens({ messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'f', input }] }] }, 'messages');
  t.equal(est, Math.ceil(bpe('f', LONG) * SAFETY) + PER_MESSAGE, 'its text is counted, no image is');
});

t.test('a PDF costs its pages, never its base64 as text, and uses none of the BPE budget', async (t) => {
  const pdf = buildPdf({ pages: 12, fanout: 5, objectStream: true });
  const data = pdf.toString('base64');
  const text = { type: 'text', text: 'Summarize' };
  const before = bpeCharsTokenized();
  const doc = estimateInput({ messages: [{ role: 'user', content: [text, { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data } }] }] }, 'messages');
  t.same(doc, { tokens: Math.ceil(bpe('Summarize') * SAFETY) + PER_MESSAGE + 12 * PDF_PAGE_TOKENS, unseenDocuments: 0 });
  t.ok(bpeCharsTokenized() - before < 100, 'the base64 data was not tokenized');
  const file = estimateInput({ messages: [{ role: 'user', content: [text, { type: 'file', file: { file_data: `data:application/pdf;base64,${data}` } }] }] }, 'chat');
  t.same(file, doc, 'a chat file part: the same');
  const inResult = estimateInput(
    { messages: [{ role: 'user', content: [text, { type: 'tool_result', tool_use_id: 't', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data } }] }] }] },
    'messages',
  );
  t.same(inResult, doc, 'inside a tool result: the same');
  // A large PDF whose base64 would be ~1M tokens of text if it were counted as such.
  const big = buildPdf({ pages: 3 });
  const padded = Buffer.concat([big.subarray(0, 9), Buffer.from(`% ${'x'.repeat(800_000)}\n`), big.subarray(9)]);
  const large = estimateInput({ messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: padded.toString('base64') } }] }] }, 'messages');
  t.equal(large.tokens, PER_MESSAGE + 3 * PDF_PAGE_TOKENS, 'its size does not matter, its pages do');
});

t.test('text documents and documents of blocks are counted as text; title and context too', async (t) => {
  const est = estimateInputTokens(
    {
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: LONG }, title: 'Fox', context: 'A pangram' },
            { type: 'document', source: { type: 'content', content: [{ type: 'text', text: 'Block' }, { type: 'image', source: { type: 'url', url: 'https://x' } }] } },
            { type: 'file', file: { file_data: `data:text/plain;base64,${Buffer.from('Filed words').toString('base64')}`, filename: 'notes.txt' } },
          ],
        },
      ],
    },
    'messages',
  );
  t.equal(est, Math.ceil(bpe('Fox', 'A pangram', LONG, 'Block', 'notes.txt', 'Filed words') * SAFETY) + PER_MESSAGE + PER_IMAGE);
});

t.test('documents the gateway cannot size are counted apart (one page each in the tokens)', async (t) => {
  const content = [
    { type: 'document', source: { type: 'url', url: 'https://x/a.pdf' } },
    { type: 'document', source: { type: 'file', file_id: 'file_1' } },
    { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: buildPdf({ pages: 2, encrypt: true }).toString('base64') } },
    { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: Buffer.from('not a pdf').toString('base64') } },
    { type: 'file', file: { file_id: 'file-abc' } },
    { type: 'file', file: { file_data: 'data:application/msword;base64,AAAA', filename: 'a.doc' } },
  ];
  const est = estimateInput({ messages: [{ role: 'user', content }] }, 'messages');
  t.equal(est.unseenDocuments, 6);
  t.equal(est.tokens, Math.ceil(bpe('a.doc') * SAFETY) + PER_MESSAGE + 6 * PDF_PAGE_TOKENS);
});

t.test('a PDF resent on the next turn is not counted again; an unreadable one is', async (t) => {
  const doc = (data: string) => ({ messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data } }] }] });
  const pdf = buildPdf({ pages: 4, padding: 1000 }).toString('base64');
  const before = pdfFilesScanned();
  const first = estimateInput(doc(pdf), 'messages');
  const again = estimateInput(doc(pdf), 'messages');
  t.same(again, first);
  t.equal(pdfFilesScanned() - before, 1, 'counted once');
  const encrypted = buildPdf({ pages: 4, encrypt: true }).toString('base64');
  estimateInput(doc(encrypted), 'messages');
  estimateInput(doc(encrypted), 'messages');
  t.equal(pdfFilesScanned() - before, 3, 'an unreadable file is looked at each time');
});

t.test('the tokenizer\'s memory of merged words stays small under distinct random words', async (t) => {
  // In a process of its own, with a collector it can run: 30,000 distinct words of 60 letters, in
  // messages too short for the estimator's own cache (CACHE_FROM), so only the tokenizer remembers them.
  const script = `
    const { estimateInputTokens } = await import(${JSON.stringify(new URL('../../dist/lib/tokens.js', import.meta.url).href)});
    let seed = 1;
    const letter = () => String.fromCharCode(97 + ((seed = (seed * 48271) % 2147483647) % 26));
    const word = () => Array.from({ length: 60 }, letter).join('');
    estimateInputTokens({ messages: [{ role: 'user', content: 'warm up' }] }, 'chat');
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 15000; i++) estimateInputTokens({ messages: [{ role: 'user', content: word() + ' ' + word() }] }, 'chat');
    gc();
    console.log(process.memoryUsage().heapUsed - before);`;
  const grew = Number(execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' }).trim()) / 1e6;
  // 30,000 such words remembered took 16 MB; MERGE_CACHE_WORDS of them 6.
  t.ok(grew < 11, `the heap grew by ${grew.toFixed(1)} MB`);
});
