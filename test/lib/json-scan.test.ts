// Finding strings, members and array items in JSON text: checked against JSON.parse of the same text.
import t from 'tap';
import { arrayItems, stringEnd, topLevelMembers } from '../../lib/json-scan.js';

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

t.test('arrayItems: each item as JSON.parse reads it, however spaced', async (t) => {
  const values = [1, -2.5e3, true, false, null, 'a]b', { a: [1, { b: ']' }] }, [[], {}], '', '\\"'];
  for (const text of [JSON.stringify(values), JSON.stringify(values, null, 2), ' [ ' + values.map((v) => JSON.stringify(v)).join(' ,\n ') + ' ] ']) {
    const at = text.indexOf('[');
    const found = arrayItems(text, at)!;
    t.same(found.items.map(([s, e]) => JSON.parse(text.slice(s, e))), values);
    t.equal(text.slice(found.end).trim(), '', 'the array ends where the text does');
  }
  t.same(arrayItems('[]', 0), { items: [], end: 2 });
  t.same(arrayItems('[ 7 ]', 0), { items: [[2, 3]], end: 5 }, 'a number before the closing bracket');
  t.equal(arrayItems('{}', 0), undefined, 'not an array');
});

t.test('topLevelMembers itemizes the member asked for, in the same pass', async (t) => {
  const body = { model: 'm', tools: [{ name: 'a' }, { name: 'b', x: [1, 2] }], messages: [{ role: 'user', content: 'hi' }] };
  for (const text of [JSON.stringify(body), JSON.stringify(body, null, 1)]) {
    const members = topLevelMembers(text, 'tools')!;
    const tools = members.get('tools')!;
    t.same(tools.items!.map(([s, e]) => JSON.parse(text.slice(s, e))), body.tools);
    t.same(JSON.parse(text.slice(tools.value, tools.end)), body.tools);
    t.equal(members.get('messages')!.items, undefined, 'other members are not itemized');
    t.same(JSON.parse(`{${text.slice(members.get('messages')!.start, members.get('messages')!.end)}}`), { messages: body.messages }, 'and the scan goes on after the itemized one');
  }
  const repeated = '{"tools":[1,2,3],"tools":[4]}';
  t.same(topLevelMembers(repeated, 'tools')!.get('tools')!.items, [[26, 27]], 'a repeated key: the last, as JSON.parse keeps');
  t.equal(topLevelMembers('{"tools":"none"}', 'tools')!.get('tools')!.items, undefined, 'not an array: no items');
});
