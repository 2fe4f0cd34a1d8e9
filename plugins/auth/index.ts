// auth: finds the caller's API key (Authorization: Bearer, or x-api-key) and loads what it may use
// into ctx.auth. Lookups are cached; the store's change counter empties the caches whenever keys or
// routing changed here or in another process (the command line), so a revoked key fails at once.
// Other processes' changes are taken in once per event-loop turn (store.sync(): SQLite reads its
// change counter; a PostgreSQL node answers from the counter its LISTEN connection keeps current):
// requests handled in one turn arrived together, and a request sent after a change finished arrives
// in a later turn. This process's own changes count at once.
// A keep-alive connection usually sends the same credential headers on every request: each
// connection remembers the last ones it sent and what they resolved to, so a repeat costs one
// constant-time comparison instead of parsing, hashing and two cache lookups. A connection may
// carry many clients (a proxy in front), hence the constant time; the entry is valid only while
// the store's change version is the one it was made under.
import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { lruOfAtMost } from '../../lib/lru.js';
import { isPromise } from '../../lib/maybe-promise.js';
import type { Plugin, PluginEnv } from '../../lib/plugin.js';
import type { AuthInfo, RequestContext, RoutingSettings } from '../../lib/context.js';
import { GatewayError } from '../../lib/errors.js';
import { foreignKeyMessage } from './foreign-keys.js';
import { hashApiKey, isWellFormedKey, keyPrefix } from '../../lib/store/api-key.js';
import type { ApiKeyCredential, Store } from '../../lib/store/types.js';

const refuse = (message: string) => new GatewayError(401, 'authentication_error', 'invalid_api_key', message);

const SEND_KEY = 'Send the complete key as `Authorization: Bearer <key>` or `x-api-key: <key>`.';
const MISSING = `Missing API key. ${SEND_KEY}`;
const INCOMPLETE = 'The API key is incomplete or a placeholder (such as sk-service-... or <API_KEY>). ' +
  'Send the complete key (sk-service- followed by its random part), as shown once when it was created.';
const UNKNOWN = `Invalid API key. ${SEND_KEY}`;
const REVOKED = `This API key has been revoked. Send the complete key of a key that is still active.`;

/** The key values the client sent, Bearer first (it wins when recognized). */
function presentedKeys(headers: IncomingHttpHeaders): string[] {
  const out: string[] = [];
  const bearer = /^\s*Bearer\s*(.*)$/i.exec(headers.authorization ?? '');
  if (bearer) out.push(bearer[1].trim());
  const x = headers['x-api-key'];
  const xKey = (Array.isArray(x) ? x[0] : x)?.trim();
  if (xKey !== undefined && xKey !== out[0]) out.push(xKey);
  return out;
}

/** Both credential headers as sent, for comparing a request's credentials with the previous one's. */
function credentialHeaders(headers: IncomingHttpHeaders): Buffer {
  const x = headers['x-api-key'];
  return Buffer.from(`${headers.authorization ?? ''}\n${Array.isArray(x) ? x.join('\n') : x ?? ''}`);
}

/** What a connection's last credential headers resolved to, under one store change version. */
interface ConnectionAuth {
  headers: Buffer;
  version: number;
  info: AuthInfo;
}

export default function auth(env: PluginEnv): Plugin {
  const store = env.store as Store;
  const keysByPrefix = lruOfAtMost<string, ApiKeyCredential[]>(10_000);
  const routingByAccount = lruOfAtMost<number, RoutingSettings>(10_000);
  const byConnection = new WeakMap<Socket, ConnectionAuth>();
  let seenVersion = -1;
  let syncedThisTurn = false;
  const endTurn = () => {
    syncedThisTurn = false;
  };

  /** Empties the caches when the store's change version moved. */
  function takeVersion(): void {
    const version = store.changeVersion();
    if (version !== seenVersion) {
      keysByPrefix.clear();
      routingByAccount.clear();
      seenVersion = version;
    }
  }

  /** Once a turn, the store's sync; a promise only when the store has to ask (PostgreSQL, polling). */
  function sync(): Promise<void> | undefined {
    if (!syncedThisTurn) {
      syncedThisTurn = true;
      setImmediate(endTurn);
      const synced = store.sync();
      if (isPromise(synced)) return synced.then(takeVersion);
    }
    takeVersion();
  }

  async function credentialsFor(prefix: string): Promise<ApiKeyCredential[]> {
    let found = keysByPrefix.get(prefix);
    if (!found) keysByPrefix.set(prefix, (found = await store.keys.findByPrefix(prefix)));
    return found;
  }

  async function routingFor(accountId: number): Promise<RoutingSettings> {
    let r = routingByAccount.get(accountId);
    if (!r) routingByAccount.set(accountId, (r = await store.routing.get(accountId)));
    return r;
  }

  /** The active key record matching `value`, or the reason it is refused. */
  async function identify(value: string): Promise<ApiKeyCredential | string> {
    if (!isWellFormedKey(value)) return foreignKeyMessage(value) ?? INCOMPLETE;
    const hash = hashApiKey(value);
    const match = (await credentialsFor(keyPrefix(value))).find((c) => timingSafeEqual(c.hash, hash));
    if (!match) return UNKNOWN;
    return match.revokedAt === null ? match : REVOKED;
  }

  /** The connection's previous credentials, when this request repeats them under the current version. */
  function fromConnection(ctx: RequestContext, socket: Socket | undefined, sent: Buffer | undefined): boolean {
    const last = socket && byConnection.get(socket);
    if (!last || !sent || last.version !== seenVersion || last.headers.length !== sent.length || !timingSafeEqual(last.headers, sent)) {
      return false;
    }
    ctx.auth = last.info;
    store.keys.touch(last.info.keyId);
    return true;
  }

  /** After sync(): the connection's last credentials when repeated, else a lookup. */
  function admit(ctx: RequestContext, socket: Socket | undefined, sent: Buffer | undefined): Promise<void> | undefined {
    return fromConnection(ctx, socket, sent) ? undefined : authenticate(ctx, socket, sent);
  }

  /** The credentials' key and routing, from the caches or the store (after sync()). */
  async function authenticate(ctx: RequestContext, socket: Socket | undefined, sent: Buffer | undefined): Promise<void> {
    const version = seenVersion;
    let refusal: string | undefined;
    for (const value of presentedKeys(ctx.req.headers)) {
      const found = await identify(value);
      if (typeof found === 'string') {
        refusal ??= found;
        continue;
      }
      const info: AuthInfo = {
        accountId: found.accountId,
        keyId: found.id,
        keyAllowedModels: found.allowedModels,
        monthlyLimitNano: found.monthlyLimitNano,
        rpm: found.rpm,
        tpm: found.tpm,
        routing: await routingFor(found.accountId),
      };
      ctx.auth = info;
      store.keys.touch(found.id);
      // Not when something changed while the lookups above awaited: info may predate it.
      if (socket && sent && store.changeVersion() === version) byConnection.set(socket, { headers: sent, version, info });
      return;
    }
    throw refuse(refusal ?? MISSING);
  }

  return {
    name: 'auth',
    // From the headers alone: a caller without a valid key never gets its body read.
    onHeaders(ctx: RequestContext) {
      const socket = ctx.req.socket as Socket | undefined;
      const sent = socket ? credentialHeaders(ctx.req.headers) : undefined;
      // Without a promise when the store answers at once (SQLite; PostgreSQL while listening) and
      // the connection repeats itself: at low rates, where each request has a turn of its own, the
      // promises cost the first byte two microtask hops.
      const synced = sync();
      if (synced) return synced.then(() => admit(ctx, socket, sent));
      return admit(ctx, socket, sent);
    },
  };
}
