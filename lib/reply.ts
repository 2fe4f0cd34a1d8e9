// Answers the gateway writes itself: a JSON body (its own reply, an upstream answer) or an error in
// the client's format, with the headers plugins asked for.
import type { ServerResponse } from 'node:http';
import type { RequestContext } from './context.js';
import { type GatewayError, errorBody } from './errors.js';

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string | number> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const payload = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
  });
  res.end(payload);
}

export function sendError(res: ServerResponse, ctx: Pick<RequestContext, 'clientFormat'>, err: GatewayError): void {
  const headers: Record<string, string | number> = {};
  if (err.retryAfter !== undefined) headers['retry-after'] = err.retryAfter;
  sendJson(res, err.status, errorBody(err, ctx.clientFormat), headers);
}

export function addPluginHeaders(ctx: RequestContext, res: ServerResponse): void {
  const h = ctx.responseHeaders;
  if (h) for (const name in h) res.setHeader(name, h[name]);
}
