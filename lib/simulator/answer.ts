// What the simulated model answers, decided once per request and rendered by either wire format.
// Output tokens: 1 per thinking or text word, plus ceil((name + arguments JSON) / 4) per tool call;
// the total never exceeds the request's output budget.
import { createHash } from 'node:crypto';
import type { WireFormat } from '../config-types.js';
import type { SimSettings, StopReason } from './directives.js';
import { arrayOf, isObject, type RequestText } from './request-text.js';

export interface ToolCall {
  id: string;
  name: string;
  input: Record<string, unknown>;
  /** `input` as JSON ("{}" when the tool has no properties). */
  json: string;
}

export interface Answer {
  /** Message id (messages) or completion id (chat). */
  id: string;
  model: string;
  created: number;
  thinking?: { text: string; signature: string; words: number };
  /** Seed of the text's words (the prompt's hash). */
  seed: number;
  textWords: number;
  tools: ToolCall[];
  stop: StopReason | 'tool_use';
  stopSequence: string | null;
  input: number;
  cacheRead: number;
  cacheWrite: number;
  cacheWrite1h: number;
  output: number;
  settings: SimSettings;
}

const THINKING_WORDS = 8;
const BYTES_DELTA = 1024;
/** Messages stream: partial_json pieces per tool call (after the empty first one); chat: fragments. */
export const ARGUMENT_PIECES = 3;

export function planAnswer(body: Record<string, any>, format: WireFormat, text: RequestText, settings: SimSettings, seq: number): Answer {
  let budget: number =
    format === 'messages' ? body.max_tokens : (body.max_completion_tokens ?? body.max_tokens ?? Number.POSITIVE_INFINITY);
  let truncated = false;
  const take = (wanted: number) => {
    const got = Math.min(wanted, budget);
    if (got < wanted) truncated = true;
    budget -= got;
    return got;
  };

  let thinking: Answer['thinking'];
  if (settings.thinking ?? wantsThinking(body, format)) {
    const words = take(THINKING_WORDS);
    const thought = Array.from({ length: words }, (_, i) => wordAt(text.hash ^ 0x5bd1e995, i)).join(' ');
    thinking = { text: thought, signature: thinkingSignature(thought), words };
  }
  const textWords = take(settings.bytes === undefined ? settings.words : wordsForBytes(text.hash, settings.bytes));

  const tools: ToolCall[] = [];
  const defs = toolDefinitions(body, format);
  for (let i = 0; i < settings.tools && defs.length > 0 && !truncated; i++) {
    const def = defs[i % defs.length];
    const input = argumentsFor(def.schema);
    const json = JSON.stringify(input);
    const cost = Math.ceil((def.name.length + json.length) / 4);
    if (cost > budget) truncated = true;
    else {
      take(cost);
      const id = format === 'messages' ? `toolu_sim${seq}_${i}` : `call_sim${seq}_${i}`;
      tools.push({ id, name: def.name, input, json });
    }
  }

  const stop = settings.stop ?? (truncated ? 'max_tokens' : tools.length > 0 ? 'tool_use' : 'end_turn');
  const stopSequence = stop === 'stop_sequence' ? (arrayOf(body.stop_sequences).find((s) => typeof s === 'string') as string | undefined) ?? null : null;
  return {
    id: format === 'messages' ? `msg_sim${seq}` : `chatcmpl-sim${seq}`,
    model: String(body.model),
    created: Math.floor(Date.now() / 1000),
    thinking,
    seed: text.hash,
    textWords,
    tools,
    stop,
    stopSequence,
    input: Math.ceil(text.chars / 4),
    cacheRead: settings.cacheRead,
    cacheWrite: settings.cacheWrite,
    cacheWrite1h: settings.cacheWrite1h,
    output: (thinking?.words ?? 0) + textWords + tools.reduce((n, t) => n + Math.ceil((t.name.length + t.json.length) / 4), 0),
    settings,
  };
}

function wantsThinking(body: Record<string, any>, format: WireFormat): boolean {
  if (format === 'messages') return body.thinking?.type === 'enabled' || body.thinking?.type === 'adaptive';
  return typeof body.reasoning_effort === 'string' && body.reasoning_effort !== 'none';
}

/** The deterministic signature of a thinking text; the simulator rejects a thinking block whose signature differs. */
export function thinkingSignature(thinking: string): string {
  return createHash('sha256').update('simulator-thinking\0').update(thinking).digest('base64');
}

/**
 * The answer's text as stream deltas, generated lazily (a `bytes=` answer is never held whole):
 * one word per delta, or `chunks=N` deltas, or ~1 KB deltas for `bytes=`.
 */
export function* textDeltas(a: Answer): Generator<string> {
  const n = a.textWords;
  const word = (i: number) => (i === 0 ? '' : ' ') + wordAt(a.seed, i);
  if (a.settings.bytes !== undefined) {
    let piece = '';
    for (let i = 0; i < n; i++) {
      piece += word(i);
      if (piece.length >= BYTES_DELTA) {
        yield piece;
        piece = '';
      }
    }
    if (piece) yield piece;
  } else if (a.settings.chunks !== undefined) {
    const groups = a.settings.chunks;
    for (let g = 0; g < groups; g++) {
      let piece = '';
      for (let i = Math.floor((g * n) / groups); i < Math.floor(((g + 1) * n) / groups); i++) piece += word(i);
      if (piece) yield piece;
    }
  } else {
    for (let i = 0; i < n; i++) yield word(i);
  }
}

export const fullText = (a: Answer): string => Array.from(textDeltas(a)).join('');

/** Thinking text as deltas: one per word. */
export const thinkingDeltas = (text: string): string[] => (text ? text.split(/(?= )/) : []);

/** Splits `s` into at most `n` non-empty pieces of near-equal length. */
export function splitInto(s: string, n: number): string[] {
  const out: string[] = [];
  const size = Math.ceil(s.length / n);
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

// Each word is one token in common BPE vocabularies (r50k, cl100k), alone and after a space, so
// "1 word = 1 output token" is what a real tokenizer counts too (the gateway estimates missing
// usage with one: words it split would make that estimate look wrong by the simulator's fault).
const WORDS = [
  'amber', 'bridge', 'river', 'echo', 'north', 'south', 'east', 'west', 'stone', 'field', 'water', 'light', 'night',
  'forest', 'cloud', 'storm', 'rain', 'wind', 'fire', 'earth', 'silver', 'bright', 'quiet', 'simple', 'green',
  'blue', 'red', 'white', 'black', 'window', 'table', 'paper', 'market', 'station', 'tower', 'castle', 'city',
  'road', 'path', 'hill', 'lake', 'shore', 'sand', 'wave', 'moon', 'star', 'sun', 'sky', 'spring', 'winter', 'gold',
  'iron', 'glass', 'wood', 'leaf', 'tree', 'flower', 'bird', 'fish', 'horse', 'apple', 'bread', 'stream', 'plain',
];

function wordAt(seed: number, i: number): string {
  let h = Math.imul(seed ^ i, 0x9e3779b1);
  h ^= h >>> 15;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return WORDS[(h >>> 0) % WORDS.length];
}

/** How many words make at least `bytes` characters of text (counted without building it). */
function wordsForBytes(seed: number, bytes: number): number {
  let length = 0;
  let n = 0;
  while (length < bytes) length += (n === 0 ? 0 : 1) + wordAt(seed, n++).length;
  return n;
}

interface ToolDefinition {
  name: string;
  schema: unknown;
}

/** The request's client tools (server tools of the messages format have a `type` and are skipped). */
function toolDefinitions(body: Record<string, any>, format: WireFormat): ToolDefinition[] {
  const out: ToolDefinition[] = [];
  for (const t of arrayOf(body.tools)) {
    if (!isObject(t)) continue;
    if (format === 'messages') {
      if (typeof t.name === 'string' && (t.type === undefined || t.type === 'custom')) out.push({ name: t.name, schema: t.input_schema });
    } else if (t.type === 'function' && isObject(t.function) && typeof t.function.name === 'string') {
      out.push({ name: t.function.name, schema: t.function.parameters });
    }
  }
  return out;
}

/** Schema-shaped arguments: strings "value-<name>", numbers 42, booleans true (an enum's first value wins). */
function argumentsFor(schema: unknown): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  const props = isObject(schema) && isObject(schema.properties) ? schema.properties : {};
  for (const [name, prop] of Object.entries(props)) {
    const p = isObject(prop) ? prop : {};
    const type = Array.isArray(p.type) ? p.type[0] : p.type;
    if (Array.isArray(p.enum) && p.enum.length > 0) input[name] = p.enum[0];
    else if (type === 'number' || type === 'integer') input[name] = 42;
    else if (type === 'boolean') input[name] = true;
    else if (type === 'array') input[name] = [];
    else if (type === 'object') input[name] = {};
    else input[name] = `value-${name}`;
  }
  return input;
}
