// Request ids: "req_" + a ULID (48-bit millisecond time, 80 random bits, Crockford base32).
// Unique, and sortable by time as text; ids made in the same millisecond stay in order.
import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const pool = Buffer.alloc(4096);
let poolPos = pool.length;
let lastMs = -1;
const lastRandom = new Uint8Array(10);

function freshRandom(out: Uint8Array): void {
  if (poolPos + out.length > pool.length) {
    randomFillSync(pool);
    poolPos = 0;
  }
  pool.copy(out, 0, poolPos, poolPos + out.length);
  poolPos += out.length;
}

/** Increment an 80-bit big-endian number; on overflow (never in practice) wait for the next ms. */
function increment(bytes: Uint8Array): boolean {
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i] !== 0xff) {
      bytes[i]++;
      return true;
    }
    bytes[i] = 0;
  }
  return false;
}

function encode(ms: number, rnd: Uint8Array): string {
  let out = '';
  let t = ms;
  const time: string[] = new Array(10);
  for (let i = 9; i >= 0; i--) {
    time[i] = ALPHABET[t % 32];
    t = Math.floor(t / 32);
  }
  out = time.join('');
  // 80 bits → 16 base32 characters, 5 bits at a time.
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < rnd.length; i++) {
    acc = (acc << 8) | rnd[i];
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += ALPHABET[(acc >> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  return out;
}

export function newRequestId(now: number = Date.now()): string {
  let ms = Math.max(now, lastMs);
  if (ms === lastMs) {
    if (!increment(lastRandom)) {
      ms = lastMs + 1;
      freshRandom(lastRandom);
    }
  } else freshRandom(lastRandom);
  lastMs = ms;
  return 'req_' + encode(ms, lastRandom);
}

/** The millisecond timestamp inside an id made by newRequestId. */
export function requestIdTime(id: string): number {
  let t = 0;
  for (const ch of id.slice(4, 14)) t = t * 32 + ALPHABET.indexOf(ch);
  return t;
}
