// A new key's secret, carried from the form post to the page that shows it once (post/redirect/get:
// a reload or Back never posts the form again). It travels in a short-lived cookie, not in server
// memory, so the page can be served by any node; sealed (AES-256-GCM) with a key derived from the
// session token, so the cookie alone reveals nothing, and cleared by the page that shows it.
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type { AccountContext } from './context.js';
import { parseCookies, setCookie } from './http.js';

const COOKIE = 'gw_new_key';
/** Long enough for a slow redirect; the page that reads it clears it at once. */
const MAX_AGE_SECONDS = 120;

const sealKey = (sessionToken: string) => createHmac('sha256', sessionToken).update('new key reveal').digest();

export function holdSecret(ctx: AccountContext, keyId: number, secret: string): void {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealKey(ctx.visitor.sessionToken!), iv);
  const sealed = Buffer.concat([cipher.update(`${keyId}:${secret}`, 'utf8'), cipher.final()]);
  setCookie(ctx.res, COOKIE, Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url'), { secure: ctx.secure, maxAgeSeconds: MAX_AGE_SECONDS });
}

/** The secret of key `keyId` if this browser's session just created it; the cookie is cleared either way. */
export function takeSecret(ctx: AccountContext, keyId: number): string | null {
  const value = parseCookies(ctx.req.headers.cookie).get(COOKIE);
  if (value === undefined) return null;
  setCookie(ctx.res, COOKIE, '', { secure: ctx.secure, maxAgeSeconds: 0 });
  try {
    const raw = Buffer.from(value, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', sealKey(ctx.visitor.sessionToken!), raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    const text = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    const colon = text.indexOf(':');
    return text.slice(0, colon) === String(keyId) ? text.slice(colon + 1) : null;
  } catch {
    return null; // another session's cookie, or tampered with
  }
}
