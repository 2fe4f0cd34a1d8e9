// Who is asking, and whether a form post is genuine. A logged-in browser holds the session token
// (HttpOnly cookie); an anonymous one gets a random browser cookie. Every state-changing form
// carries a CSRF token derived from that cookie (an HMAC: the page can show it without revealing
// the cookie), and posts that a browser marks as coming from another site are refused outright.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DashboardConfig } from '../config-types.js';
import type { Account, Store } from '../store/types.js';
import { parseCookies, setCookie } from './http.js';

const SESSION_COOKIE = 'gw_session';
const BROWSER_COOKIE = 'gw_browser';
/** A session, browser or reset token: 32 random bytes, base64url. */
export const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export interface Visitor {
  account: Account | null;
  sessionToken: string | null;
  /** The value of the hidden `csrf` field of every form this visitor may post. */
  csrf: string;
}

const csrfFor = (binding: string) => createHmac('sha256', binding).update('dashboard form').digest('base64url');

export async function identify(req: IncomingMessage, res: ServerResponse, store: Store, secure: boolean): Promise<Visitor> {
  const cookies = parseCookies(req.headers.cookie);
  const token = cookies.get(SESSION_COOKIE);
  if (token && TOKEN_SHAPE.test(token)) {
    const session = await store.sessions.get(token);
    const account = session && (await store.accounts.byId(session.accountId));
    if (account) return { account, sessionToken: token, csrf: csrfFor(token) };
  }
  let browser = cookies.get(BROWSER_COOKIE);
  if (!browser || !TOKEN_SHAPE.test(browser)) {
    browser = randomBytes(32).toString('base64url');
    setCookie(res, BROWSER_COOKIE, browser, { secure });
  }
  return { account: null, sessionToken: null, csrf: csrfFor(browser) };
}

/**
 * A post from another site: the browser says so (Sec-Fetch-Site), or its Origin is not this site's
 * (the Host it asked for, the configured public address, or behind a trusted proxy X-Forwarded-Host).
 */
export function crossSite(req: IncomingMessage, cfg: DashboardConfig): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return true;
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return true; // "null" and other opaque origins
  }
  const ours = [req.headers.host, cfg.public_url && new URL(cfg.public_url).host, cfg.trust_proxy && req.headers['x-forwarded-host']];
  return !ours.includes(host);
}

export function validCsrf(visitor: Visitor, sent: string | null): boolean {
  const want = Buffer.from(visitor.csrf);
  const got = Buffer.from(sent ?? '');
  return got.length === want.length && timingSafeEqual(got, want);
}

export async function startSession(res: ServerResponse, store: Store, accountId: number, ttlMs: number, secure: boolean): Promise<void> {
  const { token } = await store.sessions.create(accountId, ttlMs);
  setCookie(res, SESSION_COOKIE, token, { secure, maxAgeSeconds: Math.floor(ttlMs / 1000) });
}

export async function endSession(res: ServerResponse, store: Store, visitor: Visitor, secure: boolean): Promise<void> {
  if (visitor.sessionToken) await store.sessions.end(visitor.sessionToken);
  setCookie(res, SESSION_COOKIE, '', { secure, maxAgeSeconds: 0 });
}
