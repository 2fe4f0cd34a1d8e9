// jsonString is JSON.stringify for a string, character for character, escapes and surrogates included;
// stringEnd finds where a JSON string ends.
import t from 'tap';
import { jsonString, stringEnd } from '../../lib/json-string.js';

t.test('the same text as JSON.stringify', async (t) => {
  const strings = ['', 'req_01HX-abc', 'bench/chat-native@bench-chat', 'modèle ü ß', '😀 paired', '\u2028\u2029 separators', '\u007f DEL',
    'a"b', 'a\\b', 'tab\there', 'x\ud800y lone high', 'x\udc00y lone low', '\ud83d', 'ok'.repeat(500) + '"'];
  for (let c = 0; c < 0x80; c++) strings.push(`<${String.fromCharCode(c)}>`);
  // Named in ASCII: a raw U+2028 or control character in a message breaks the TAP stream.
  const name = (s: string) => JSON.stringify(s).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  for (const s of strings) t.equal(jsonString(s), JSON.stringify(s), name(s));
});

t.test('stringEnd: after the closing quote, whatever escapes and lengths come before it', async (t) => {
  // Quotes and backslashes in runs, at every distance from the opening quote (the character loop
  // hands over to indexOf after 16), in strings short and long.
  let seed = 7;
  const random = (n: number) => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n);
  const alphabet = ['a', '"', '\\', 'é', '\n', ' '];
  let checked = 0;
  for (let k = 0; k < 2000; k++) {
    let s = '';
    for (let len = random(k % 10 === 0 ? 400 : 60); s.length < len; ) s += alphabet[random(alphabet.length)];
    const prefix = ' '.repeat(random(3));
    const text = `${prefix}${JSON.stringify(s)},"next"`;
    const end = prefix.length + JSON.stringify(s).length;
    if (stringEnd(text, prefix.length) !== end) {
      t.fail(`string ${JSON.stringify(s)}: ${stringEnd(text, prefix.length)} instead of ${end}`);
      break;
    }
    checked++;
  }
  t.equal(checked, 2000, 'every random string');
  const escapedAt16 = `"${'a'.repeat(15)}\\"x"`; // the escape's backslash is the loop's last character
  t.equal(stringEnd(escapedAt16, 0), escapedAt16.length);
  const unclosed = '"never closed \\"';
  t.equal(stringEnd(unclosed, 0), unclosed.length, 'no closing quote: the end of the text');
  t.equal(stringEnd('"'.padEnd(40, 'x'), 0), 40);
});
