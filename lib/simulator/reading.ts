// What a request body comes to (its text and the settings its directives ask for), remembered for
// the last body read: clients send the same body again and again (the benchmark's gateway with every
// request, an agent's retries), and reading it (hashing every character, parsing the directives)
// was a fifth of a plain answer's cost. Both steps are pure functions of the exact text and format.
import type { WireFormat } from '../config-types.js';
import { settingsFor, type SimSettings } from './directives.js';
import { readRequestText, type RequestText } from './request-text.js';

export interface Reading {
  text: RequestText;
  settings: SimSettings;
}

/** Larger bodies are read each time: comparing them costs about what reading does, and keeping one costs memory. */
const MEMO_MAX_CHARS = 64 * 1024;

/** Reads `body` (parsed from `raw`); throws a 400 for a bad directive, as settingsFor does. */
export function lastReadingMemo(): (raw: string, body: Record<string, any>, format: WireFormat) => Reading {
  let lastRaw: string | undefined;
  let lastFormat: WireFormat | undefined;
  let last: Reading | undefined;
  return (raw, body, format) => {
    if (raw === lastRaw && format === lastFormat) return last!;
    const text = readRequestText(body, format);
    const reading = { text, settings: settingsFor(text.directives, body.model) };
    if (raw.length <= MEMO_MAX_CHARS) [lastRaw, lastFormat, last] = [raw, format, reading];
    return reading;
  };
}
