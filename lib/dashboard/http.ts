// Request and response plumbing of the dashboard: cookies, forms, HTML answers with the security
// headers every page carries.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody } from '../body.js';
import type { Html } from './html.js';

export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    const name = part.slice(0, eq).trim();
    if (!out.has(name)) out.set(name, part.slice(eq + 1).trim());
  }
  return out;
}

interface CookieOptions {
  maxAgeSeconds?: number;
  secure: boolean;
}

/** HttpOnly, SameSite=Lax, scoped to /dashboard; Secure when served over TLS. */
export function setCookie(res: ServerResponse, name: string, value: string, opts: CookieOptions): void {
  const parts = [`${name}=${value}`, 'Path=/dashboard', 'HttpOnly', 'SameSite=Lax'];
  if (opts.maxAgeSeconds !== undefined) parts.push(`Max-Age=${opts.maxAgeSeconds}`);
  if (opts.secure) parts.push('Secure');
  const prev = res.getHeader('set-cookie');
  res.setHeader('set-cookie', [...(Array.isArray(prev) ? prev : []), parts.join('; ')]);
}

const SECURITY_HEADERS = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
  // Our own stylesheet and script only; no inline script can run even if some text slipped through.
  'content-security-policy': "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'",
};

export function sendHtml(res: ServerResponse, status: number, body: Html): void {
  const text = '<!doctype html>\n' + body.text;
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** 303: after a form post, the browser fetches the next page with GET. */
export function redirect(res: ServerResponse, location: string): void {
  res.writeHead(303, { ...SECURITY_HEADERS, location, 'content-length': 0 });
  res.end();
}

export function sendText(res: ServerResponse, status: number, contentType: string, body: string | Buffer, cache = 'no-store'): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), 'cache-control': cache, 'x-content-type-options': 'nosniff' });
  res.end(body);
}

/** A file to save (`filename` of letters, digits, dots, dashes), not to show. */
export function sendDownload(res: ServerResponse, contentType: string, filename: string, body: string): void {
  res.writeHead(200, {
    ...SECURITY_HEADERS, 'content-type': contentType, 'content-length': Buffer.byteLength(body),
    'content-disposition': `attachment; filename="${filename}"`,
  });
  res.end(body);
}

/** Dashboard forms are small; a larger body is refused unread. */
const FORM_LIMIT = 64 * 1024;

/** An url-encoded form body, or null when the request is not one. */
export async function readForm(req: IncomingMessage): Promise<URLSearchParams | null> {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    req.resume();
    return null;
  }
  return new URLSearchParams((await readBody(req, FORM_LIMIT)).toString('utf8'));
}

/** Whether the request reached us over TLS (directly or through a proxy that says so). */
export const viaTls = (req: IncomingMessage): boolean =>
  String(req.headers['x-forwarded-proto'] ?? '').split(',')[0].trim() === 'https';

/** The client's address; behind a trusted proxy, the one it appended to X-Forwarded-For. */
export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  const forwarded = String(req.headers['x-forwarded-for'] ?? '');
  if (trustProxy && forwarded) return forwarded.split(',').at(-1)!.trim();
  return req.socket.remoteAddress ?? 'unknown';
}

/** The address browsers reach this gateway at: the configured one, else taken from the request. */
export function siteOrigin(req: IncomingMessage, publicUrl: string | undefined): string {
  if (publicUrl) return publicUrl.replace(/\/+$/, '');
  return `${viaTls(req) ? 'https' : 'http'}://${req.headers.host ?? 'localhost'}`;
}
