// Remembered token counts of texts (the estimator's cache). A Map keyed by the text itself makes V8
// hash the whole text on every lookup, and a freshly parsed string has no hash yet: ~10
// instructions a character, 150 µs for a 100 KB conversation resent, where JSON.parse took 35-50.
// Here a text is found by a fingerprint of its length, its first characters and some sampled across
// it (a Reading), then confirmed by comparing it whole with the remembered text (memcmp speed), so a hit is exact: a count
// is never another text's, whatever a client sends (the hold is built from it). Texts made from one
// template (tool definitions, say) often share a fingerprint: the first keeps the slot, the others
// ("twins") are remembered by their whole text, as before, so they cost the hash but never a recount.
import { randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';

/**
 * How a fingerprint reads a text: its first `head` characters whole (texts made from one template
 * differ early: a tool definition in its name, which comes after `{"type":"function","function":{"name":`),
 * then one character in `every` across the rest, at most `samples`.
 */
export interface Reading {
  head: number;
  every: number;
  samples: number;
}

/**
 * Tool definitions (the tools' counts): the head reaches the name. One in 16, at most 64: with 64 for
 * every text, a short one took as many samples as a long one (the bench's four texts of 286 to 773
 * characters: 1.5-1.6 µs in a loop, 0.8-0.9 sampled this way).
 */
export const TOOL_READING: Reading = { head: 48, every: 16, samples: 64 };

/**
 * Conversation texts (messages, system prompts) are seldom made from one template: a few characters
 * of the head and fewer samples tell them apart. Texts of one length that agree on every character
 * read become twins (remembered by their whole text): a near-copy costs the hash, never a wrong
 * count. The bench's request (four texts of 286 to 773 characters), main-thread instructions a
 * request (callgrind): 10,400 read as tools are, 3,000 read this way.
 */
export const TEXT_READING: Reading = { head: 8, every: 32, samples: 16 };

interface Entry {
  text: string;
  tokens: number;
}

/**
 * A per-process seed and sampling phase: which characters are sampled, and how they mix, cannot be
 * known from outside, so a client cannot aim its texts at another's fingerprint (which would only
 * make that text a twin, remembered by its whole text).
 */
const random = randomBytes(8);
const SEED = random.readInt32LE(0);
const PHASE = random.readUInt32LE(4) / 2 ** 32;

/** A 30-bit fingerprint of the length, the head and samples across the text (a small integer: V8 hashes it without looking at the text). */
export function fingerprint(text: string, { head, every, samples: most }: Reading = TOOL_READING): number {
  const n = text.length;
  const samples = Math.min(most, Math.floor(n / every));
  const stride = samples === 0 ? 0 : Math.floor(n / samples);
  let h = Math.imul(n ^ SEED, 0x9e3779b1);
  for (let i = 0; i < head && i < n; i++) {
    h = Math.imul(h ^ text.charCodeAt(i), 0x85ebca6b);
    h ^= h >>> 15;
  }
  for (let i = 0, at = Math.floor(PHASE * stride); i < samples; i++, at += stride) {
    h = Math.imul(h ^ text.charCodeAt(at), 0x85ebca6b);
    h ^= h >>> 15;
  }
  return h & 0x3fffffff;
}

export class TextCounts {
  /** By fingerprint, the text holding it and its count; by text, a twin's count. One LRU, one bound. */
  private readonly remembered: LRUCache<number | string, Entry | number>;

  /** `maxChars`: the texts remembered, in characters, at most. `print`: a fingerprint (tests force collisions). */
  constructor(maxChars: number, private readonly print: (text: string) => number) {
    this.remembered = new LRUCache<number | string, Entry | number>({
      maxSize: maxChars,
      sizeCalculation: (value, key) => (typeof value === 'number' ? (key as string).length : value.text.length),
    });
  }

  get(text: string): number | undefined {
    const slot = this.remembered.get(this.print(text)) as Entry | undefined;
    if (slot === undefined) return undefined;
    if (slot.text === text) return slot.tokens;
    return this.remembered.get(text) as number | undefined;
  }

  set(text: string, tokens: number): void {
    const print = this.print(text);
    const slot = this.remembered.get(print) as Entry | undefined;
    if (slot === undefined || slot.text === text) this.remembered.set(print, { text, tokens });
    else this.remembered.set(text, tokens);
  }
}
