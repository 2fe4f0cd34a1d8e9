import t from 'tap';
import { createHash } from 'node:crypto';
import { generateApiKey, isWellFormedKey, keyPrefix } from '../../../lib/store/api-key.js';
import { verifyPassword } from '../../../lib/store/password.js';
import { openSql } from '../../helpers/sql.js';
import { backends, freshStore, seedAccount } from './fixtures/store.js';

t.test('generated keys: sk-service- and 40 base62 characters, all different', async (t) => {
  const keys = new Set(Array.from({ length: 1000 }, generateApiKey));
  t.equal(keys.size, 1000);
  for (const k of keys) if (!/^sk-service-[A-Za-z0-9]{40}$/.test(k)) t.fail(`bad key ${k}`);
  const chars = new Set([...keys].flatMap((k) => [...k.slice(11)]));
  t.equal(chars.size, 62, 'every base62 character occurs');
  t.ok(isWellFormedKey([...keys][0]));
  for (const bad of ['sk-service-...', 'sk-service-', '<API_KEY>', 'sk-service-<API_KEY>', 'sk-service-abc', 'sk-other-' + 'a'.repeat(40)]) {
    t.notOk(isWellFormedKey(bad), `${bad} is not a key`);
  }
});

backends(t, 'only the hash and a short prefix are stored; revocation is recorded once', async (t, backend) => {
  const { store, dbPath } = await freshStore(t, backend);
  const a = await seedAccount(store, 0);
  const { key, secret } = await store.keys.create({ accountId: a.accountId, name: ' ci ', allowedModels: ['test/gpt'], monthlyLimitNano: 5 });
  t.match(key, { name: 'ci', prefix: keyPrefix(secret), allowedModels: ['test/gpt'], monthlyLimitNano: 5, revokedAt: null });
  t.equal(key.prefix.length, 'sk-service-'.length + 8);

  const db = await openSql(dbPath, { readonly: true });
  t.teardown(() => db.close());
  const row = (await db.get('SELECT * FROM api_keys WHERE id = ?', key.id)) as Record<string, unknown>;
  for (const [col, v] of Object.entries(row)) {
    if (typeof v === 'string') t.notOk(v.includes(secret.slice(19)), `column ${col} holds no secret part`);
  }
  t.same(row.hash, createHash('sha256').update(secret).digest());

  const found = await store.keys.findByPrefix(keyPrefix(secret));
  t.equal(found.length, 1);
  t.equal(await store.keys.revoke(key.id), true);
  t.equal(await store.keys.revoke(key.id), false, 'already revoked');
  t.equal(await store.keys.revoke(9999), false, 'unknown');
  t.type((await store.keys.get(key.id))!.revokedAt, 'number');
  await t.rejects(store.keys.create({ accountId: 9999, name: 'x' }), { code: 'not_found' });
  await t.rejects(store.keys.create({ accountId: a.accountId, name: '  ' }), { code: 'invalid' });
});

backends(t, 'a key\'s own rate limits are kept; null means the config default', async (t, backend) => {
  const { store, dbPath } = await freshStore(t, backend);
  const a = await seedAccount(store, 0);
  t.match(await store.keys.get(a.keyId), { rpm: null, tpm: null }, 'none given');
  const { key, secret } = await store.keys.create({ accountId: a.accountId, name: 'limited', rpm: 30, tpm: 40_000 });
  t.match(key, { rpm: 30, tpm: 40_000 });
  t.match(await store.keys.get(key.id), { rpm: 30, tpm: 40_000 });
  t.match((await store.keys.findByPrefix(keyPrefix(secret)))[0], { rpm: 30, tpm: 40_000 }, 'auth sees them');
  for (const bad of [0, -1, 1.5, Number.NaN, 2 ** 53]) {
    await t.rejects(store.keys.create({ accountId: a.accountId, name: 'x', rpm: bad }), { code: 'invalid' }, `rpm ${bad}`);
    await t.rejects(store.keys.create({ accountId: a.accountId, name: 'x', tpm: bad }), { code: 'invalid' }, `tpm ${bad}`);
  }
  const db = await openSql(dbPath);
  t.teardown(() => db.close());
  await t.rejects(db.exec(`UPDATE api_keys SET rpm = 0 WHERE id = ${key.id}`), /CHECK|check constraint/, 'the table refuses a zero limit too');
});

backends(t, 'last use is recorded with the next batch', async (t, backend) => {
  const { store } = await freshStore(t, backend);
  const a = await seedAccount(store, 0);
  t.equal((await store.keys.get(a.keyId))!.lastUsedAt, null);
  store.keys.touch(a.keyId);
  await store.flush();
  t.type((await store.keys.get(a.keyId))!.lastUsedAt, 'number');
});

backends(t, 'accounts: unique email (any case), password stored as scrypt', async (t, backend) => {
  const { store, dbPath } = await freshStore(t, backend);
  const acc = await store.accounts.create({ email: ' Alice@Example.com', password: 'correct horse' });
  t.match(acc, { email: 'alice@example.com', hasPassword: true });
  await t.rejects(store.accounts.create({ email: 'ALICE@example.com' }), { code: 'conflict' });
  await t.rejects(store.accounts.create({ email: 'not-an-email' }), { code: 'invalid' });
  t.equal((await store.accounts.byEmail('alice@EXAMPLE.com'))?.id, acc.id);
  t.equal(await store.accounts.count(), 1);

  const raw = await openSql(dbPath, { readonly: true });
  const hash = (await raw.value('SELECT password_hash FROM accounts')) as string;
  await raw.close();
  t.match(hash, /^scrypt\$/);
  t.equal(await verifyPassword('correct horse', hash), true);
  t.equal(await verifyPassword('wrong', hash), false);
});

backends(t, 'routing settings: defaults, partial updates', async (t, backend) => {
  const { store } = await freshStore(t, backend);
  const a = await seedAccount(store, 0);
  t.same(await store.routing.get(a.accountId), { allow: null, deny: [], priceCapInput: null, priceCapOutput: null });
  await store.routing.set(a.accountId, { allow: ['test/gpt'], priceCapInput: 3000 });
  t.same(await store.routing.set(a.accountId, { deny: ['test/claude'] }),
    { allow: ['test/gpt'], deny: ['test/claude'], priceCapInput: 3000, priceCapOutput: null });
  t.same(await store.routing.get(a.accountId), { allow: ['test/gpt'], deny: ['test/claude'], priceCapInput: 3000, priceCapOutput: null });
});
