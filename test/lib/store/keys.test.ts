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

backends(t, 'an active key\'s name, models and limits can be changed; auth sees the change; a revoked key cannot', async (t, backend) => {
  const { store } = await freshStore(t, backend);
  const a = await seedAccount(store, 0);
  const { key, secret } = await store.keys.create({ accountId: a.accountId, name: 'ci', allowedModels: ['test/gpt'], monthlyLimitNano: 5, rpm: 9 });
  const changed = await store.keys.update(key.id, { name: ' deploy ', allowedModels: null, monthlyLimitNano: 7_000 });
  t.match(changed, { id: key.id, name: 'deploy', allowedModels: null, monthlyLimitNano: 7_000, rpm: 9, tpm: null, prefix: key.prefix }, 'absent fields kept');
  t.match((await store.keys.findByPrefix(keyPrefix(secret)))[0], { name: 'deploy', allowedModels: null, monthlyLimitNano: 7_000 });
  t.match(await store.keys.update(key.id, { allowedModels: ['test/claude'], monthlyLimitNano: null, rpm: null }), { allowedModels: ['test/claude'], monthlyLimitNano: null, rpm: null });
  await t.rejects(store.keys.update(key.id, { name: ' ' }), { code: 'invalid' });
  await t.rejects(store.keys.update(key.id, { monthlyLimitNano: -1 }), { code: 'invalid' });
  await t.rejects(store.keys.update(key.id, { tpm: 0 }), { code: 'invalid' });
  t.equal(await store.keys.update(9999, { name: 'x' }), null, 'unknown');
  await store.keys.revoke(key.id);
  t.equal(await store.keys.update(key.id, { name: 'x' }), null, 'revoked');
  t.equal((await store.keys.get(key.id))!.name, 'deploy');
});

backends(t, 'open holds are summed per key of the account', async (t, backend) => {
  const { store } = await freshStore(t, backend);
  const a = await seedAccount(store, 1_000_000);
  const b = await seedAccount(store, 1_000_000);
  const second = (await store.keys.create({ accountId: a.accountId, name: 'two' })).key;
  const hold = async (accountId: number, keyId: number, amount: number) => {
    const r = await store.ledger.reserve({ accountId, keyId, amount, monthlyLimitNano: null });
    if (!r.ok) throw new Error(r.reason);
    return r.hold.id;
  };
  t.same([...await store.ledger.heldByKey(a.accountId)], [], 'none in flight');
  const h1 = await hold(a.accountId, a.keyId, 100);
  await hold(a.accountId, a.keyId, 20);
  await hold(a.accountId, second.id, 5);
  await hold(b.accountId, b.keyId, 999);
  await store.flush();
  t.same(new Map(await store.ledger.heldByKey(a.accountId)), new Map([[a.keyId, 120], [second.id, 5]]));
  await store.ledger.settle(h1, 40);
  t.same(new Map(await store.ledger.heldByKey(a.accountId)), new Map([[a.keyId, 20], [second.id, 5]]), 'an ended hold no longer counts, written or not');
  await store.flush();
  t.same(new Map(await store.ledger.heldByKey(a.accountId)), new Map([[a.keyId, 20], [second.id, 5]]));
});
