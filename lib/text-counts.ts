// Remembered token counts of texts (the estimator's cache). A Map keyed by the text itself makes V8
// hash the whole text on every lookup, and a freshly parsed string has no hash yet: ~10
// instructions a character, 150 µs for a 100 KB conversation resent, where JSON.parse took 35-50.
// Here a text is found by a fingerprint of its length and 64 characters sampled across it, then
// confirmed by comparing it whole with the remembered text (memcmp speed), so a hit is exact: a count
// is never another text's, whatever a client sends (the hold is built from it). Texts that share a
// fingerprint (same length, same sampled characters) share a bucket of BUCKET entries.
import { randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';

const SAMPLES = 64;
/** Remembered texts per fingerprint; a fuller bucket forgets its oldest. */
const BUCKET = 4;

interface Entry {
  text: string;
  tokens: number;
}

/**
 * A per-process seed and sampling phase: which characters are sampled, and how they mix, cannot be
 * known from outside, so a client cannot aim texts at another's bucket (it could only evict, and
 * only cost CPU, as flooding the cache can anyway).
 */
const random = randomBytes(8);
const SEED = random.readInt32LE(0);
const PHASE = random.readUInt32LE(4) / 2 ** 32;

/** A 30-bit fingerprint (a small integer: V8 hashes it without looking at the text). */
export function fingerprint(text: string): number {
  const n = text.length;
  const step = n / SAMPLES;
  let h = Math.imul(n ^ SEED, 0x9e3779b1);
  for (let i = 0; i < SAMPLES; i++) {
    h = Math.imul(h ^ text.charCodeAt(Math.floor((i + PHASE) * step)), 0x85ebca6b);
    h ^= h >>> 15;
  }
  return h & 0x3fffffff;
}

export class TextCounts {
  private readonly buckets: LRUCache<number, Entry[]>;

  /** `maxChars`: the texts remembered, in characters, at most. `print`: fingerprint (tests force collisions). */
  constructor(maxChars: number, private readonly print: (text: string) => number = fingerprint) {
    this.buckets = new LRUCache<number, Entry[]>({ maxSize: maxChars, sizeCalculation: (bucket) => bucket.reduce((n, e) => n + e.text.length, 0) });
  }

  get(text: string): number | undefined {
    const bucket = this.buckets.get(this.print(text));
    if (bucket === undefined) return undefined;
    for (const e of bucket) if (e.text === text) return e.tokens;
    return undefined;
  }

  set(text: string, tokens: number): void {
    const print = this.print(text);
    const others = (this.buckets.get(print) ?? []).filter((e) => e.text !== text).slice(1 - BUCKET);
    this.buckets.set(print, [...others, { text, tokens }]);
  }
}
