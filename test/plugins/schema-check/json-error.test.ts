// The JSON syntax error locator agrees with JSON.parse and points at the first bad character.
import t from 'tap';
import fc from 'fast-check';
import { findJsonSyntaxError } from '../../../plugins/schema-check/json-error.js';

const parses = (text: string) => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

t.test('positions and reasons', async (t) => {
  const cases: [string, number, number, number, RegExp][] = [
    ['{"a":}', 5, 1, 6, /unexpected "}"; expected a value/],
    ['[1,2', 4, 1, 5, /unexpected end of input; expected "," or "]"/],
    ['{"a" 1}', 5, 1, 6, /expected ":" after the property name/],
    ['{"a":1,}', 7, 1, 8, /expected a property name in double quotes/],
    ['[01]', 2, 1, 3, /unexpected "1"; expected "," or "]"/],
    ['{"a":tru}', 5, 1, 6, /expected "true"/],
    ['"a\\x"', 3, 1, 4, /expected a valid string character or escape/],
    ['"a\\u12G4"', 3, 1, 4, /escape/],
    ['"tab\there"', 4, 1, 5, /unexpected "\\t"/],
    ['{}\n\n  x', 6, 3, 3, /expected the end of the body/],
    ['\ufeff{}', 0, 1, 1, /expected a value/],
  ];
  for (const [text, offset, line, column, reason] of cases) {
    const found = findJsonSyntaxError(text);
    t.match(found, { offset, line, column, reason }, JSON.stringify(text));
  }
});

t.test('deep nesting does not overflow the stack', async (t) => {
  t.equal(findJsonSyntaxError('['.repeat(500_000) + ']'.repeat(500_000)), undefined);
  t.match(findJsonSyntaxError('['.repeat(500_000)), { offset: 500_000, reason: /end of input/ });
});

t.test('agrees with JSON.parse on valid and mutated JSON', async (t) => {
  const mutated = fc
    .tuple(fc.json(), fc.nat(), fc.constantFrom('', '{', '}', '[', ']', ',', ':', '"', '\\', 'e', '-', '0', '.', ' ', 'n', '\n', '\u0001'))
    .map(([text, at, insert]) => {
      const i = at % (text.length + 1);
      return at % 2 === 0 ? text.slice(0, i) + insert + text.slice(i) : text.slice(0, i) + insert + text.slice(i + 1);
    });
  fc.assert(
    fc.property(fc.oneof(fc.json(), mutated, fc.string()), (text) => {
      const found = findJsonSyntaxError(text);
      if (parses(text) !== (found === undefined)) return false;
      return found === undefined || (found.offset >= 0 && found.offset <= text.length);
    }),
    { numRuns: 5000 },
  );
  t.pass('5000 texts agree');
});
