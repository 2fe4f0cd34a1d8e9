// jsonString is JSON.stringify for a string, character for character, escapes and surrogates included.
import t from 'tap';
import { jsonString } from '../../lib/json-string.js';

t.test('the same text as JSON.stringify', async (t) => {
  const strings = ['', 'req_01HX-abc', 'bench/chat-native@bench-chat', 'modèle ü ß', '😀 paired', '\u2028\u2029 separators', '\u007f DEL',
    'a"b', 'a\\b', 'tab\there', 'x\ud800y lone high', 'x\udc00y lone low', '\ud83d', 'ok'.repeat(500) + '"'];
  for (let c = 0; c < 0x80; c++) strings.push(`<${String.fromCharCode(c)}>`);
  // Named in ASCII: a raw U+2028 or control character in a message breaks the TAP stream.
  const name = (s: string) => JSON.stringify(s).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  for (const s of strings) t.equal(jsonString(s), JSON.stringify(s), name(s));
});
