// Input-token estimates before the upstream has counted: a real BPE tokenizer (gpt-tokenizer's
// r50k encoding: the smallest in memory, and it counts high) over every piece of text the request
// carries, scaled up, because the hold must be an upper bound and other vendors' tokenizers
// produce more tokens for the same text.
import { countTokens } from 'gpt-tokenizer/encoding/r50k_base';
import { LRUCache } from 'lru-cache';
import type { WireFormat } from './config-types.js';

/** Other tokenizers count up to ~25% more than o200k on the same text. */
const SAFETY = 1.25;
const PER_MESSAGE = 4;
/** A large image costs about this many tokens at most (1568 in the messages vendor's sizing rule). */
const PER_IMAGE = 1600;

interface Tally {
  text: string[];
  images: number;
  messages: number;
}

function walk(value: unknown, t: Tally): void {
  if (typeof value === 'string') {
    t.text.push(value);
    return;
  }
  if (Array.isArray(value)) {
    for (const v of value) walk(v, t);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  const o = value as Record<string, unknown>;
  const type = o.type;
  if (type === 'image' || type === 'image_url') {
    t.images++;
    return; // base64 data is not text the model reads
  }
  for (const [k, v] of Object.entries(o)) {
    // Structural keys (roles, types, ids, flags) are covered by the per-message overhead.
    if (k === 'type' || k === 'role' || k === 'id' || k === 'tool_use_id' || k === 'tool_call_id' || k === 'cache_control' || k === 'signature') continue;
    walk(v, t);
  }
}

/**
 * BPE merging slows down with the square of a run's length (a 200 KB unbroken "word" takes seconds):
 * runs this long are counted by length instead, at one token per 2 characters (above what BPE gives).
 */
const LONG_RUN = /\S{200,}/g;

/** Text longer than this is counted from samples: BPE over megabytes would block the event loop for seconds. */
const SAMPLE_ABOVE = 64 * 1024;
const SAMPLE_CHARS = 8 * 1024;
const SAMPLES = 4;

function countHigh(text: string): number {
  if (text.length > SAMPLE_ABOVE) return countSampled(text);
  let long = 0;
  const rest = text.replace(LONG_RUN, (run) => {
    long += Math.ceil(run.length / 2);
    return '';
  });
  return long + countTokens(rest);
}

/**
 * Tokens per character measured on a few slices spread over the text, applied to its whole length,
 * with the densest slice's rate (an upper estimate: the hold must not be short).
 */
function countSampled(text: string): number {
  let rate = 0;
  const step = Math.floor((text.length - SAMPLE_CHARS) / (SAMPLES - 1));
  for (let i = 0; i < SAMPLES; i++) {
    const slice = text.slice(i * step, i * step + SAMPLE_CHARS);
    rate = Math.max(rate, countHigh(slice) / slice.length);
  }
  return Math.ceil(rate * text.length);
}

/**
 * Conversations resend their history every turn: counts of longer texts are remembered (bounded by
 * total characters), so each message is tokenized about once rather than once per turn.
 */
const CACHE_FROM = 256;
const cache = new LRUCache<string, number>({ maxSize: 8 * 1024 * 1024, sizeCalculation: (_v, k) => k.length });

function countCached(text: string): number {
  if (text.length < CACHE_FROM) return countHigh(text);
  let n = cache.get(text);
  if (n === undefined) cache.set(text, (n = countHigh(text)));
  return n;
}

/** Tokens of the text parts of a request body: system, messages, tools (each piece counted on its own). */
export function estimateInputTokens(body: Record<string, any>, _format: WireFormat): number {
  const t: Tally = { text: [], images: 0, messages: 0 };
  if (body.system !== undefined) walk(body.system, t);
  if (Array.isArray(body.messages)) {
    t.messages = body.messages.length;
    walk(body.messages, t);
  }
  if (Array.isArray(body.tools)) for (const tool of body.tools) t.text.push(JSON.stringify(tool));
  let bpe = 0;
  for (const piece of t.text) bpe += countCached(piece);
  return Math.ceil(bpe * SAFETY) + t.messages * PER_MESSAGE + t.images * PER_IMAGE;
}

/** Tokens of generated text (for charging a stream that broke before the upstream reported usage). */
export function countTextTokens(text: string): number {
  return text ? countHigh(text) : 0;
}
