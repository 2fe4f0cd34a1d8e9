import t, { type Test } from 'tap';
import auth from '../../../plugins/auth/index.js';
import { GatewayError } from '../../../lib/errors.js';
import { openStore } from '../../../lib/store/index.js';
import { foreignKeys } from '../../helpers/foreign-keys.js';
import { pluginEnv, requestContext, seedAccount, tempStore } from '../../lib/store/fixtures/store.js';

async function setup(t: Test) {
  const ts = tempStore(t);
  const a = await seedAccount(ts.store, 0, { allowedModels: ['test/gpt'], monthlyLimitNano: 7_000_000_000 });
  const other = await ts.store.keys.create({ accountId: a.accountId, name: 'other' });
  const plugin = auth(pluginEnv(ts.store, ts.config));
  /** Runs auth for these headers (on this connection, if given): the AuthInfo, or the 401 thrown. */
  const call = async (headers: Record<string, string>, socket?: object) => {
    const ctx = requestContext({ headers, socket });
    try {
      await plugin.onHeaders!(ctx);
      return ctx.auth!;
    } catch (err) {
      if (err instanceof GatewayError) return err;
      throw err;
    }
  };
  return { ...ts, a, other, plugin, call };
}

function is401(t: Test, r: unknown, message: RegExp, what: string) {
  t.ok(r instanceof GatewayError, `${what}: refused`);
  t.match(r, { status: 401, type: 'authentication_error', code: 'invalid_api_key', message }, what);
}

t.test('a valid key in either header sets ctx.auth with its limits and the account routing', async (t) => {
  const { store, a, call } = await setup(t);
  await store.routing.set(a.accountId, { deny: ['test/claude'], priceCapOutput: 15000 });
  const want = {
    accountId: a.accountId, keyId: a.keyId, keyAllowedModels: ['test/gpt'], monthlyLimitNano: 7_000_000_000, rpm: null, tpm: null,
    routing: { allow: null, deny: ['test/claude'], priceCapInput: null, priceCapOutput: 15000 },
  };
  t.same(await call({ authorization: `Bearer ${a.secret}` }), want, 'Authorization: Bearer');
  t.same(await call({ authorization: `bearer   ${a.secret}` }), want, 'the scheme is case-insensitive');
  t.same(await call({ 'x-api-key': a.secret }), want, 'x-api-key');
  await store.flush();
  t.type((await store.keys.get(a.keyId))!.lastUsedAt, 'number', 'last use recorded');
});

t.test('header precedence: a recognized Bearer key wins, else x-api-key is tried', async (t) => {
  const { a, other, call } = await setup(t);
  t.match(await call({ authorization: `Bearer ${a.secret}`, 'x-api-key': other.secret }), { keyId: a.keyId });
  t.match(await call({ authorization: `Bearer ${other.secret}`, 'x-api-key': a.secret }), { keyId: other.key.id });
  const unknown = 'sk-service-' + 'Z'.repeat(40);
  t.match(await call({ authorization: `Bearer ${unknown}`, 'x-api-key': a.secret }), { keyId: a.keyId },
    'an unrecognized Bearer value falls back to x-api-key');
  t.match(await call({ authorization: 'Bearer sk-service-...', 'x-api-key': a.secret }), { keyId: a.keyId },
    'so does a placeholder');
  t.match(await call({ authorization: `Basic dXNlcjpwYXNz`, 'x-api-key': a.secret }), { keyId: a.keyId },
    'a non-Bearer Authorization is not a key');
  is401(t, await call({ authorization: `Bearer ${unknown}`, 'x-api-key': 'sk-service-...' }), /Invalid API key.*complete key/,
    'both unrecognized: the Bearer reason');
});

t.test('401 for a missing, incomplete, placeholder, unknown or revoked key', async (t) => {
  const { store, a, call } = await setup(t);
  is401(t, await call({}), /Missing API key.*complete key/, 'no key');
  is401(t, await call({ authorization: 'Bearer' }), /incomplete or a placeholder.*complete key/, 'empty Bearer');
  is401(t, await call({ authorization: 'Basic dXNlcjpwYXNz' }), /Missing API key.*Bearer/, 'Basic only');
  for (const placeholder of ['sk-service-...', '<API_KEY>', 'sk-service-<API_KEY>', 'sk-service-', a.secret.slice(0, 30)]) {
    is401(t, await call({ authorization: `Bearer ${placeholder}` }), /incomplete or a placeholder.*complete key/, `"${placeholder}"`);
  }
  is401(t, await call({ 'x-api-key': a.secret.slice(0, -1) }), /Invalid API key.*complete key/, 'one character short');
  is401(t, await call({ 'x-api-key': a.secret.slice(0, -1) + (a.secret.endsWith('A') ? 'B' : 'A') }), /Invalid API key/,
    'same prefix, different secret');
  await store.keys.revoke(a.keyId);
  is401(t, await call({ authorization: `Bearer ${a.secret}` }), /revoked.*complete key/, 'revoked');
});

t.test('a complete key of another service: 401 that names it; its placeholders stay placeholders', async (t) => {
  const { a, call } = await setup(t);
  for (const [what, key, names] of foreignKeys) {
    for (const headers of [{ authorization: `Bearer ${key}` }, { 'x-api-key': key }] as Record<string, string>[]) {
      const r = await call(headers);
      is401(t, r, names, `${what} in ${Object.keys(headers)[0]}`);
      t.match(r, { message: /a key of another service, not of this gateway/ }, `${what}: not called a placeholder`);
      t.notMatch((r as GatewayError).message, key.slice(-20), `${what}: not echoed`);
    }
  }
  for (const placeholder of ['sk-ant-...', 'sk-ant-api03-...', 'sk-proj-...', `sk-proj-${'x'.repeat(48)}`, 'AIza...', 'gsk_...']) {
    is401(t, await call({ 'x-api-key': placeholder }), /incomplete or a placeholder/, `"${placeholder}"`);
  }
  t.match(await call({ authorization: `Bearer ${foreignKeys[0][1]}`, 'x-api-key': a.secret }), { keyId: a.keyId },
    'a vendor key in Authorization (left from another setup) still falls back to our key in x-api-key');
});

t.test('changes by another process (the command line) apply on the very next request', async (t) => {
  const { config, a, call } = await setup(t);
  t.match(await call({ 'x-api-key': a.secret }), { keyId: a.keyId, routing: { deny: [] } }, 'cached now');

  // A request sent after the command finished reaches the server in a later event-loop turn.
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
  const cli = openStore(config);
  await cli.routing.set(a.accountId, { deny: ['test/gpt'] });
  await nextTurn();
  t.match(await call({ 'x-api-key': a.secret }), { routing: { deny: ['test/gpt'] } }, 'routing change seen');
  const fresh = await cli.keys.create({ accountId: a.accountId, name: 'made by the cli' });
  await nextTurn();
  t.match(await call({ 'x-api-key': fresh.secret }), { keyId: fresh.key.id }, 'a new key works at once');
  await cli.keys.revoke(a.keyId);
  await cli.close();
  await nextTurn();
  is401(t, await call({ 'x-api-key': a.secret }), /revoked/, 'a revoked key is refused at once');
});

t.test('one keep-alive connection: each request is judged by its own credentials', async (t) => {
  const { store, config, a, other, call } = await setup(t);
  const conn = {}; // a connection that may carry several clients (a proxy in front of the gateway)
  t.match(await call({ authorization: `Bearer ${a.secret}` }, conn), { keyId: a.keyId }, 'first request');
  t.match(await call({ authorization: `Bearer ${a.secret}` }, conn), { keyId: a.keyId }, 'the same key again');
  t.match(await call({ authorization: `Bearer ${other.secret}` }, conn), { keyId: other.key.id }, 'another key on it');
  t.match(await call({ authorization: `Bearer ${a.secret}` }, conn), { keyId: a.keyId }, 'and back');
  const wrong = a.secret.slice(0, -1) + (a.secret.endsWith('A') ? 'B' : 'A');
  is401(t, await call({ authorization: `Bearer ${wrong}` }, conn), /Invalid API key/, 'one character changed');
  t.match(await call({ authorization: `Bearer ${a.secret}` }, conn), { keyId: a.keyId }, 'the right key after a wrong one');
  t.match(await call({ authorization: `Bearer ${a.secret}`, 'x-api-key': other.secret }, conn), { keyId: a.keyId },
    'a second header makes other credentials: Bearer still wins');
  t.match(await call({ authorization: `Bearer ${wrong}`, 'x-api-key': a.secret }, conn), { keyId: a.keyId },
    'an unrecognized Bearer still falls back to x-api-key');
  is401(t, await call({}, conn), /Missing API key/, 'no credentials at all');

  await store.routing.set(a.accountId, { deny: ['test/claude'] });
  t.match(await call({ authorization: `Bearer ${a.secret}` }, conn), { routing: { deny: ['test/claude'] } },
    'a routing change made by this process is seen at once');
  t.match(await call({ authorization: `Bearer ${other.secret}` }, conn), { keyId: other.key.id }, 'the other key, remembered');
  await store.keys.revoke(other.key.id);
  is401(t, await call({ authorization: `Bearer ${other.secret}` }, conn), /revoked/, 'a key revoked by this process');

  t.match(await call({ authorization: `Bearer ${a.secret}` }, conn), { keyId: a.keyId }, 'remembered again');
  const cli = openStore(config);
  await cli.keys.revoke(a.keyId);
  await cli.close();
  await new Promise((resolve) => setImmediate(resolve)); // the next request arrives in a later turn
  is401(t, await call({ authorization: `Bearer ${a.secret}` }, conn), /revoked/, 'a key revoked by the command line');
});

t.test('SQLite: a connection repeating its credentials in a turn of its own is admitted without a promise', async (t) => {
  const { store, config, a, plugin } = await setup(t);
  const conn = {};
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
  const headers = { authorization: `Bearer ${a.secret}` };
  const first = requestContext({ headers, socket: conn });
  await plugin.onHeaders!(first);
  t.match(first.auth, { keyId: a.keyId }, 'the first request looks the key up');
  for (let i = 0; i < 3; i++) {
    await store.flush(); // our own batch landed meanwhile, as at low rates between requests
    await nextTurn();
    const ctx = requestContext({ headers, socket: conn });
    t.equal(plugin.onHeaders!(ctx), undefined, `request ${i + 2}, a later turn: no promise, no microtask hop before the body is read`);
    t.match(ctx.auth, { keyId: a.keyId });
  }
  // A change from the command line is still seen at the next request, on the same connection.
  const cli = openStore(config);
  await cli.keys.revoke(a.keyId);
  await cli.close();
  await nextTurn();
  await t.rejects(async () => plugin.onHeaders!(requestContext({ headers, socket: conn })), { status: 401, message: /revoked/ },
    'a key revoked by the command line');
});

t.test('a key with its own rate limits brings them to ctx.auth', async (t) => {
  const { store, a, call } = await setup(t);
  const { secret } = await store.keys.create({ accountId: a.accountId, name: 'limited', rpm: 30, tpm: 40_000 });
  t.match(await call({ authorization: `Bearer ${secret}` }), { rpm: 30, tpm: 40_000 });
});
