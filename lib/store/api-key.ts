// API key format: "sk-service-" + 40 base62 characters (≈238 bits from crypto.randomBytes).
// Only the sha256 of the whole key and its display prefix (the first PREFIX_CHARS random
// characters, also used to find the record) are stored.
import * as crypto from 'node:crypto';
import { createHash, randomBytes } from 'node:crypto';

export const KEY_PREFIX = 'sk-service-';
const RANDOM_CHARS = 40;
const PREFIX_CHARS = 8;
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** A complete key as issued (older or longer keys with ≥ 32 characters stay valid). */
const KEY_SHAPE = /^sk-service-[A-Za-z0-9]{32,128}$/;

export function generateApiKey(): string {
  let out = KEY_PREFIX;
  while (out.length < KEY_PREFIX.length + RANDOM_CHARS) {
    for (const b of randomBytes(64)) {
      // 248 = 4 × 62: rejecting the top bytes keeps every character equally likely.
      if (b < 248 && out.length < KEY_PREFIX.length + RANDOM_CHARS) out += BASE62[b % 62];
    }
  }
  return out;
}

export function isWellFormedKey(value: string): boolean {
  return KEY_SHAPE.test(value);
}

/** Node's one-shot hash (20.12+, 21.7+) does in one call what a Hash object does in three: half the time per request. */
const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: 'buffer') => Buffer }).hash;

export function hashApiKey(key: string): Buffer {
  return oneShotHash ? oneShotHash('sha256', key, 'buffer') : createHash('sha256').update(key).digest();
}

/** The non-secret display and lookup handle of a well-formed key. */
export function keyPrefix(key: string): string {
  return key.slice(0, KEY_PREFIX.length + PREFIX_CHARS);
}
