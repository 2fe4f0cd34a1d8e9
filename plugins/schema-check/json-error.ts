// Where a JSON text goes wrong. V8's JSON.parse messages often omit the position ("Unexpected token
// '}', ... is not valid JSON"), so a body that failed to parse is scanned again, once, by this small
// iterative scanner (no recursion: a deeply nested body cannot overflow the stack).

export interface JsonSyntaxError {
  /** Offset in characters from the start of the text. */
  offset: number;
  line: number;
  column: number;
  /** e.g. `unexpected "}"; expected a value`. */
  reason: string;
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const HEX4 = /[0-9a-fA-F]{4}/y;

/** The first syntax error in `text`, or undefined when the scanner finds none. */
export function findJsonSyntaxError(text: string): JsonSyntaxError | undefined {
  const stack: string[] = []; // open containers: '{' or '['
  let i = 0;
  let expecting: 'value' | 'key' | 'after-value' = 'value';

  const fail = (reason: string): JsonSyntaxError => {
    const found = i >= text.length ? 'end of input' : JSON.stringify(text[i]);
    return { offset: i, ...lineAndColumn(text, i), reason: `unexpected ${found}; expected ${reason}` };
  };
  /** Scans a string starting at its quote; returns false at a bad character (i points at it). */
  const scanString = (): boolean => {
    for (i++; i < text.length; i++) {
      const c = text[i];
      if (c === '"') {
        i++;
        return true;
      }
      if (c < ' ') return false;
      if (c === '\\') {
        i++;
        if (text[i] === 'u') {
          HEX4.lastIndex = i + 1;
          if (!HEX4.test(text)) return false;
          i += 4;
        } else if (!ESCAPES.has(text[i])) return false;
      }
    }
    return false;
  };

  for (;;) {
    while (WHITESPACE.has(text[i])) i++;
    const c = text[i];
    if (expecting === 'value') {
      if (c === '{' || c === '[') {
        stack.push(c);
        i++;
        while (WHITESPACE.has(text[i])) i++;
        if (text[i] === (c === '{' ? '}' : ']')) {
          stack.pop();
          i++;
          expecting = 'after-value';
        } else expecting = c === '{' ? 'key' : 'value';
        continue;
      }
      if (c === '"') {
        if (!scanString()) return fail('a valid string character or escape');
      } else if (c === 't' || c === 'f' || c === 'n') {
        const word = c === 't' ? 'true' : c === 'f' ? 'false' : 'null';
        if (!text.startsWith(word, i)) return fail(`"${word}"`);
        i += word.length;
      } else {
        NUMBER.lastIndex = i;
        if (!NUMBER.test(text)) return fail('a value (object, array, string, number, true, false or null)');
        i = NUMBER.lastIndex;
      }
      expecting = 'after-value';
    } else if (expecting === 'key') {
      if (c !== '"') return fail('a property name in double quotes');
      if (!scanString()) return fail('a valid string character or escape');
      while (WHITESPACE.has(text[i])) i++;
      if (text[i] !== ':') return fail('":" after the property name');
      i++;
      expecting = 'value';
    } else {
      const open = stack[stack.length - 1];
      if (open === undefined) return i < text.length ? fail('the end of the body') : undefined;
      const close = open === '{' ? '}' : ']';
      if (c === ',') {
        i++;
        expecting = open === '{' ? 'key' : 'value';
      } else if (c === close) {
        stack.pop();
        i++;
      } else return fail(`"," or "${close}"`);
    }
  }
}

function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let at = text.indexOf('\n'); at !== -1 && at < offset; at = text.indexOf('\n', at + 1)) {
    line++;
    lineStart = at + 1;
  }
  return { line, column: offset - lineStart + 1 };
}
