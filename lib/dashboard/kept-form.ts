// A form sent after its session ended is not acted on (its CSRF token belonged to that session).
// The login page keeps what was typed, its non-secret fields in a hidden field; after the login the
// page the form came from shows them again, filled in, for the owner to check and send with a fresh
// token and their own click. Nothing is replayed, and nothing secret is kept.
import type { PageContext } from './context.js';
import { parseCookies, setCookie } from './http.js';
import { safeNext } from './router.js';

const KEPT_COOKIE = 'gw_kept';
/** Kept fields, url-encoded, at most this long (the cookie that carries them past the login stays small). */
const MAX_KEPT = 2400;
/** How long the kept fields wait for the page to be shown again. */
const KEPT_SECONDS = 600;
/** Never kept: the token, anything like a password, and a confirmation the owner must give again. */
const NOT_KEPT = /^csrf$|password|secret|^confirm$/i;

/** The form's fields worth keeping, url-encoded; empty when there are none or too many. */
export function keptFields(form: URLSearchParams): string {
  const kept = new URLSearchParams([...form].filter(([name]) => !NOT_KEPT.test(name))).toString();
  return kept.length <= MAX_KEPT ? kept : '';
}

/** The dashboard page the form was on: the Referer when it is this site's, else the form's own address. */
export function formPage(ctx: PageContext): string {
  const referer = ctx.req.headers.referer;
  try {
    const from = referer ? new URL(referer) : null;
    if (from && from.host === ctx.req.headers.host) return safeNext(from.pathname + from.search);
  } catch {
    // not a URL: use the form's address
  }
  return safeNext(ctx.url.pathname);
}

/** After the login: the kept fields wait (for a while) for the page at `next`. */
export function stashKept(ctx: PageContext, next: string, kept: string): void {
  const value = Buffer.from(JSON.stringify({ path: new URL(next, 'http://x').pathname, kept })).toString('base64url');
  setCookie(ctx.res, KEPT_COOKIE, value, { secure: ctx.secure, maxAgeSeconds: KEPT_SECONDS });
}

/** The fields kept for this page, taken (shown once), or null. */
export function takeKept(ctx: PageContext): URLSearchParams | null {
  const value = parseCookies(ctx.req.headers.cookie).get(KEPT_COOKIE);
  if (!value) return null;
  let stash: { path?: unknown; kept?: unknown };
  try {
    stash = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
  } catch {
    stash = {};
  }
  if (stash.path !== ctx.url.pathname && stash.path !== undefined) return null; // kept for another page: it waits
  setCookie(ctx.res, KEPT_COOKIE, '', { secure: ctx.secure, maxAgeSeconds: 0 });
  return typeof stash.kept === 'string' ? new URLSearchParams(stash.kept) : null;
}

/** The notice of a page shown again with kept fields. */
export const KEPT_NOTICE = {
  kind: 'info', text: 'Your session had ended, so nothing was saved. What you entered is below: check it and send it again.',
} as const;
