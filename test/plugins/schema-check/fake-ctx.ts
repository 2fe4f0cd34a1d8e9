// A minimal request context and runner for driving the schema-check plugin's onRequest directly.
import type { IncomingMessage } from 'node:http';
import { createContext, type RequestContext, type Route } from '../../../lib/context.js';
import type { Plugin, PluginEnv } from '../../../lib/plugin.js';
import { GatewayError } from '../../../lib/errors.js';
import schemaCheck from '../../../plugins/schema-check/index.js';

export const plugin: Plugin = schemaCheck({ config: {}, offersByModel: new Map() } as unknown as PluginEnv);

/** A context for `route`; a body that is not a string or Buffer is serialized as JSON; null: no Content-Type. */
export function fakeCtx(route: Route, body: unknown, contentType: string | null = 'application/json'): RequestContext {
  const rawBody = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  const headers: Record<string, string> = contentType === null ? {} : { 'content-type': contentType };
  return createContext({
    id: 'test',
    route,
    clientFormat: route === 'chat' ? 'chat' : 'messages',
    req: { headers } as unknown as IncomingMessage,
    rawBody,
  });
}

/** Runs onRequest; returns the GatewayError it threw, or undefined when it accepted the request. */
export async function check(ctx: RequestContext): Promise<GatewayError | undefined> {
  try {
    await plugin.onRequest!(ctx);
    return undefined;
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
}
