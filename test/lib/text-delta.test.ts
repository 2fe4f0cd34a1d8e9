// The plain text delta recognized without JSON.parse (lib/text-delta.ts): whatever it recognizes is
// valid JSON of the shape it claims, with the text (and chat model) JSON.parse reads; the vendors'
// recorded text deltas are recognized; anything else is left to JSON.parse.
import t, { type Test } from 'tap';
import type { WireFormat } from '../../lib/config-types.js';
import { textDeltaOf } from '../../lib/text-delta.js';
import { loadRecordings, parseSse } from '../helpers/replay.js';

/** A test name on one TAP line: control, separator and other non-ASCII characters escaped. */
const shown = (s: string) => s.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** What JSON.parse says `data` is: the text and model of a plain text delta, or undefined. */
function parsedDelta(format: WireFormat, data: string): { text: string; model?: string; index?: number } | undefined {
  let j: any;
  try {
    j = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (format === 'messages') {
    return j?.type === 'content_block_delta' && j.delta?.type === 'text_delta' && typeof j.delta.text === 'string' ? { text: j.delta.text, index: j.index } : undefined;
  }
  const c = j?.choices;
  if (!Array.isArray(c) || c.length !== 1 || c[0].finish_reason !== null || j.usage) return undefined;
  const d = c[0].delta;
  return d && Object.keys(d).length === 1 && typeof d.content === 'string' && typeof j.model === 'string' ? { text: d.content, model: j.model } : undefined;
}

/** A recognized event must be what JSON.parse reads (the converse need not hold: then it is parsed). */
function checkAgrees(t: Test, format: WireFormat, data: string): boolean {
  const got = textDeltaOf(format, data);
  if (got === undefined) return false;
  const want = parsedDelta(format, data);
  if (!want || want.text !== got.text || want.model !== got.model || want.index !== got.index) {
    t.fail(`recognized but JSON.parse reads otherwise: ${shown(data)}`, { got, want });
  }
  return true;
}

const messagesDelta = (text: string, pad = '') => `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":${JSON.stringify(text)}}${pad}}`;
const chatDelta = (content: string, extra = '') =>
  `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1766084443,"model":"gpt-4o","service_tier":"default","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}},"logprobs":null,"finish_reason":null}],"usage":null${extra}}`;

t.test("the vendors' recorded text deltas are recognized, as JSON.parse reads them", async (t) => {
  const recognized: Record<string, number> = {};
  for (const r of loadRecordings().filter((r) => r.stream)) {
    let n = 0;
    let deltas = 0;
    for (const ev of parseSse(r.body.toString('utf8'))) {
      if (checkAgrees(t, r.format, ev.data)) n++;
      if (parsedDelta(r.format, ev.data)) deltas++;
    }
    recognized[r.name] = n;
    // Anthropic's and OpenAI's own: every one (their padding and added fields included).
    if (/^(anthropic|openai)-/.test(r.name)) t.equal(n, deltas, `${r.name}: all ${deltas} text deltas`);
  }
  t.equal(recognized['anthropic-cache-read-stream'], 40);
  t.equal(recognized['openai-length-stream'], 50);
});

t.test('escapes are decoded as JSON.parse decodes them', async (t) => {
  for (const text of ['', 'plain', 'line\nbreak', 'quote " and \\ backslash', 'tab\there', 'é ü 中文', '😀 \ud83d\ude00', '\u2028\u2029', '\u0000\u001f']) {
    t.same(textDeltaOf('messages', messagesDelta(text)), { text, index: 0 }, shown(text));
    t.same(textDeltaOf('chat', chatDelta(text)), { text, model: 'gpt-4o' }, shown(text));
  }
  t.same(textDeltaOf('messages', '{"type":"content_block_delta","index":12,"delta":{"type":"text_delta","text":"\\u00e9\\/\\ud800"}}'), { text: 'é/\ud800', index: 12 });
});

t.test('what is not valid JSON of the exact shape is left to JSON.parse', async (t) => {
  const messages = [
    '{"type":"content_block_delta","index":007,"delta":{"type":"text_delta","text":"x"}}', // a leading zero
    '{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"x"}}',
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\tb"}}', // a raw tab inside the string
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\\x41"}}', // no such escape
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\\u12"}}',
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}\u00a0', // not JSON whitespace
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}\u2028',
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}}',
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}',
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}} x',
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","extra":1}}',
    '{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}',
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"},"type":"error"}', // a repeated key: the last wins
  ];
  for (const data of messages) t.equal(textDeltaOf('messages', data), undefined, shown(data));
  const chat = [
    chatDelta('x').replace('"finish_reason":null', '"finish_reason":"stop"'),
    chatDelta('x').replace('"usage":null', '"usage":{"prompt_tokens":1}'),
    chatDelta('x').replace('"content":"x"', '"content":null'),
    chatDelta('x').replace('"content":"x"', '"content":"x","reasoning_content":null'),
    chatDelta('x').replace('"model":"gpt-4o"', '"model":"gpt\\u002d4o"'), // an escaped model: parsed, then renamed the slow way
    chatDelta('x').replace('"index":0', '"index":1'),
    chatDelta('x', ',"error":{"message":"boom"}'),
    chatDelta('x') + ' ',
  ];
  for (const data of chat) t.equal(textDeltaOf('chat', data), undefined, shown(data));
  // Each format's shape is its own.
  t.equal(textDeltaOf('chat', messagesDelta('x')), undefined);
  t.equal(textDeltaOf('messages', chatDelta('x')), undefined);
});

t.test('random edits of text deltas: whatever is still recognized is what JSON.parse reads', async (t) => {
  // A fixed seed: the same edits every run.
  let seed = 42;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  const alphabet = ['"', '\\', '{', '}', '[', ']', ',', ':', ' ', '\t', '\n', '\u00a0', '\u2028', '\u0001', 'x', '0', '1', 'u', 'n', 'e', '-', '.'];
  const samples: [WireFormat, string][] = [
    ['messages', messagesDelta('Hello "world"\n\\ é', '   ')],
    ['chat', chatDelta('Hello "world"\n\\ é', ',"obfuscation":"abc"')],
  ];
  let recognized = 0;
  for (let i = 0; i < 20_000; i++) {
    const [format, base] = samples[i % samples.length];
    let s = base;
    for (let k = 1 + random(3); k > 0; k--) {
      const at = random(s.length + 1);
      const c = alphabet[random(alphabet.length)];
      const op = random(3);
      s = op === 0 ? s.slice(0, at) + c + s.slice(at) : op === 1 ? s.slice(0, at) + s.slice(at + 1) : s.slice(0, at) + c + s.slice(at + 1);
    }
    if (checkAgrees(t, format, s)) recognized++;
  }
  // Edits inside the text or the padding keep many recognized: the check above ran on them.
  t.ok(recognized > 1000, `${recognized} edited deltas still recognized`);
});
