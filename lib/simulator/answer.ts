// What the simulated model answers, decided once per request and rendered by either wire format.
// Output tokens: 1 per thinking or text word, ceil(characters / 4) of JSON text, plus
// ceil((name + arguments JSON) / 4) per tool call; the total never exceeds the request's output budget.
import { createHash } from 'node:crypto';
import type { WireFormat } from '../config-types.js';
import type { SimSettings, StopReason } from './directives.js';
import { forcesCall, outputFormatOf, toolChoiceOf, toolDefinitions, toolsToCall, type OutputFormat, type ToolDefinition } from './request-options.js';
import { arrayOf, isObject, type RequestText } from './request-text.js';
import { valueFor } from './schema-value.js';

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
  /** Words of prose text (0 when the text is JSON). */
  textWords: number;
  /** The text when the request asked for JSON output (cut short when the output budget ran out). */
  json?: string;
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

const DEFAULT_WORDS = 12;
const THINKING_WORDS = 8;
const BYTES_DELTA = 1024;
/** Stream deltas of JSON text: a few tokens each. */
const JSON_DELTA = 16;
/** Messages stream: partial_json pieces per tool call (after the empty first one); chat: fragments. */
export const ARGUMENT_PIECES = 3;

/** Output tokens of JSON text (tool arguments, structured output): 4 characters a token. */
const jsonTokens = (chars: number) => Math.ceil(chars / 4);

/**
 * Tool calls: `tools=N` calls when the tool choice is auto, at least one when it forces a call, none
 * when it is "none". Text: JSON when the request asks for JSON output and no tool is called (JSON is
 * the final answer); else `words=` words, by default 12, or none beside a forced call or beside the
 * calls of an answer that asks for JSON.
 */
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

  const choice = toolChoiceOf(body, format);
  const calls = toolsToCall(toolDefinitions(body, format), choice, settings.tools);
  const output = outputFormatOf(body, format);
  let textWords = 0;
  let json: string | undefined;
  let textTokens = 0;
  if (output !== undefined && calls.length === 0) {
    const whole = jsonAnswer(output, text.hash, settings.words ?? DEFAULT_WORDS);
    textTokens = take(jsonTokens(whole.length));
    json = truncated ? cutAt(whole, textTokens * 4) : whole;
  } else {
    // No prose beside a forced call, nor before the calls of an answer whose final form is JSON.
    const words = settings.words ?? (forcesCall(choice) || output !== undefined ? 0 : DEFAULT_WORDS);
    textWords = textTokens = take(settings.bytes === undefined ? words : wordsForBytes(text.hash, settings.bytes));
  }

  const tools: ToolCall[] = [];
  for (let i = 0; i < calls.length && !truncated; i++) {
    const def = calls[i];
    const input = argumentsFor(def);
    const json = JSON.stringify(input);
    const cost = jsonTokens(def.name.length + json.length);
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
    json,
    tools,
    stop,
    stopSequence,
    input: Math.ceil(text.chars / 4),
    cacheRead: settings.cacheRead,
    cacheWrite: settings.cacheWrite,
    cacheWrite1h: settings.cacheWrite1h,
    output: (thinking?.words ?? 0) + textTokens + tools.reduce((n, t) => n + jsonTokens(t.name.length + t.json.length), 0),
    settings,
  };
}

function wantsThinking(body: Record<string, any>, format: WireFormat): boolean {
  if (format === 'messages') return body.thinking?.type === 'enabled' || body.thinking?.type === 'adaptive';
  return typeof body.reasoning_effort === 'string' && body.reasoning_effort !== 'none';
}

/** JSON output: a value of the schema, or for json_object an object whose "answer" holds the words. */
function jsonAnswer(output: OutputFormat, seed: number, words: number): string {
  if (output.type === 'json_schema') return JSON.stringify(valueFor(output.schema, 'answer'));
  return JSON.stringify({ answer: Array.from({ length: words }, (_, i) => wordAt(seed, i)).join(' ') });
}

/** The first `n` UTF-16 units of `s`, never half a surrogate pair (a cut-off answer is still valid text). */
function cutAt(s: string, n: number): string {
  const code = s.charCodeAt(n - 1);
  return s.slice(0, code >= 0xd800 && code <= 0xdbff ? n - 1 : n);
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
  if (a.json !== undefined) {
    const pieces = a.settings.chunks ?? Math.ceil(a.json.length / JSON_DELTA);
    if (a.json !== '') yield* splitInto(a.json, pieces);
    return;
  }
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

/** The whole text: what textDeltas adds up to, built without its generator (a third of a non-stream answer's own cost). */
export function fullText(a: Answer): string {
  if (a.json !== undefined) return a.json;
  let text = '';
  for (let i = 0; i < a.textWords; i++) text += (i === 0 ? '' : ' ') + wordAt(a.seed, i);
  return text;
}

/** Whether the answer has a text part (prose or JSON). */
export const hasText = (a: Answer): boolean => (a.json !== undefined ? a.json.length > 0 : a.textWords > 0);

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

/** Arguments that validate against the tool's input schema ("{}" when it has no properties). */
function argumentsFor(def: ToolDefinition): Record<string, unknown> {
  const input = valueFor(def.schema ?? { type: 'object' }, def.name);
  // Arguments are an object, whatever a malformed schema says.
  return isObject(input) ? input : {};
}
