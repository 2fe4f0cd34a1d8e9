// The store methods the dashboard added: password checks, sessions (listed, ended but the current one), password reset tokens, payments credited exactly once,
// history filters and paging, per-day aggregates.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import type { HistoryRow } from '../../lib/store/types.js';
import { checkInvariants } from '../helpers/invariants.js';
import { openSql } from '../helpers/sql.js';
import { backends, freshStore, seedAccount, storeConfig } from '../lib/store/fixtures/store.js';

const USD = 1_000_000_000;
const DAY = 86_400_000;

backends(t, 'checkPassword: the right password only, and never for accounts without one', async (t, backend) => {
  const { store } = await freshStore(t, backend);
  const a = await store.accounts.create({ email: 'Owner@Example.com', password: 'open sesame 1' });
  t.equal((await store.accounts.checkPassword('owner@example.com', 'open sesame 1'))?.id, a.id);
  t.equal((await store.accounts.checkPassword('OWNER@example.com ', 'open sesame 1'))?.id, a.id, 'email case and spaces do not matter');
  t.equal(await store.accounts.checkPassword('owner@example.com', 'open sesame 2'), null, 'wrong password');
  t.equal(await store.accounts.checkPassword('nobody@example.com', 'open sesame 1'), null, 'unknown email');
  await store.accounts.create({ email: 'cli@example.com' });
  t.equal(await store.accounts.checkPassword('cli@example.com', ''), null, 'an account made without a password cannot log in');
});

backends(t, 'sessions: a token works until it ends or expires; only its hash is stored', async (t, backend) => {
  let now = Date.UTC(2026, 0, 10);
  const { store, dbPath } = await freshStore(t, backend, { clock: () => now });
  const a = await store.accounts.create({ email: 's@example.com', password: 'password-1' });
  const s1 = await store.sessions.create(a.id, 60_000);
  const s2 = await store.sessions.create(a.id, 60_000);
  t.not(s1.token, s2.token);
  t.match(s1.token, /^[A-Za-z0-9_-]{43}$/, '256 random bits');
  t.same(await store.sessions.get(s1.token), { accountId: a.id, expiresAt: now + 60_000 });
  t.equal(await store.sessions.get(s1.token + 'x'), null);
  await store.sessions.end(s1.token);
  t.equal(await store.sessions.get(s1.token), null, 'ended');
  t.ok(await store.sessions.get(s2.token), 'the other session lives on');
  now += 60_000;
  t.equal(await store.sessions.get(s2.token), null, 'expired');
  const db = await openSql(dbPath, { readonly: true });
  t.teardown(() => db.close());
  const raw = (await db.all('SELECT * FROM dashboard_sessions')) as { token_hash: Buffer }[];
  t.ok(raw.length > 0 && raw.every((r) => !r.token_hash.toString('latin1').includes(s2.token)), 'the token itself is not in the database');
});

backends(t, 'sessions: listed per account with the current one marked, no secret; all but the current one end', async (t, backend) => {
  let now = Date.UTC(2026, 0, 10);
  const { store } = await freshStore(t, backend, { clock: () => now });
  const a = await store.accounts.create({ email: 'list@example.com', password: 'password-1' });
  const b = await store.accounts.create({ email: 'other@example.com', password: 'password-1' });
  const old = await store.sessions.create(a.id, 60_000);
  now += 1000;
  const mine = await store.sessions.create(a.id, 120_000);
  now += 1000;
  const newest = await store.sessions.create(a.id, 60_000);
  const bystander = await store.sessions.create(b.id, 60_000);
  t.same(await store.sessions.listFor(a.id, mine.token), [
    { createdAt: now, expiresAt: now + 60_000, current: false },
    { createdAt: now - 1000, expiresAt: now - 1000 + 120_000, current: true },
    { createdAt: now - 2000, expiresAt: now - 2000 + 60_000, current: false },
  ], 'newest first, the asking browser\'s marked, times only');
  t.same((await store.sessions.listFor(a.id)).map((s) => s.current), [false, false, false], 'no token: none is current');
  now += 59_000;
  t.equal((await store.sessions.listFor(a.id, mine.token)).length, 2, 'an expired session is not listed');
  t.equal(await store.sessions.endOthers(a.id, mine.token), 2, 'the expired one and the newest ended');
  t.ok(await store.sessions.get(mine.token), 'the current session stays');
  t.equal(await store.sessions.get(newest.token), null);
  t.equal(await store.sessions.get(old.token), null);
  t.same((await store.sessions.listFor(a.id, mine.token)).map((s) => s.current), [true]);
  t.ok(await store.sessions.get(bystander.token), 'another account\'s session stays');
});

backends(t, 'setPassword: keeps the session it is asked to keep, ends the account\'s others', async (t, backend) => {
  const { store } = await freshStore(t, backend);
  const a = await store.accounts.create({ email: 'keep@example.com', password: 'password-1' });
  const [here, there] = [await store.sessions.create(a.id, 60_000), await store.sessions.create(a.id, 60_000)];
  t.same(await store.accounts.setPassword(a.id, 'password-2', here.token), { sessionsEnded: 1 });
  t.ok(await store.sessions.get(here.token), 'kept');
  t.equal(await store.sessions.get(there.token), null, 'ended');
  t.equal((await store.accounts.checkPassword('keep@example.com', 'password-2'))?.id, a.id);
  t.same(await store.accounts.setPassword(a.id, 'password-3'), { sessionsEnded: 1 }, 'without one to keep, all end');
  t.equal(await store.sessions.get(here.token), null);
});

backends(t, 'password resets: a token works once, until it expires; a newer one replaces it; only its hash is stored', async (t, backend) => {
  let now = Date.UTC(2026, 0, 10);
  const { store, dbPath } = await freshStore(t, backend, { clock: () => now });
  const a = await store.accounts.create({ email: 'forgot@example.com', password: 'password-1' });
  const b = await store.accounts.create({ email: 'other@example.com' });
  const r = await store.passwordResets.create(a.id, 3_600_000);
  t.match(r.token, /^[A-Za-z0-9_-]{43}$/, '256 random bits');
  t.equal(r.expiresAt, now + 3_600_000);
  t.same(await store.passwordResets.find(r.token), { accountId: a.id, expiresAt: now + 3_600_000 }, 'found without being used');
  t.same(await store.passwordResets.find(r.token), { accountId: a.id, expiresAt: now + 3_600_000 }, 'still there');
  t.equal(await store.passwordResets.find(r.token + 'x'), null);
  t.equal(await store.passwordResets.consume(r.token + 'x'), null, 'an unknown token');
  const raw = await openSql(dbPath, { readonly: true });
  t.teardown(() => raw.close());
  const rows = (await raw.all('SELECT * FROM password_resets')) as { token_hash: Buffer }[];
  t.ok(rows.length === 1 && !rows[0].token_hash.toString('latin1').includes(r.token), 'the token itself is not in the database');

  // Ten looks at once first: a PostgreSQL store then has ten connections open, and the ten uses go out together.
  t.equal((await Promise.all(Array.from({ length: 10 }, () => store.passwordResets.find(r.token)))).filter(Boolean).length, 10);
  const uses = await Promise.all(Array.from({ length: 10 }, () => store.passwordResets.consume(r.token)));
  t.same(uses.filter((u) => u !== null), [a.id], '10 uses at once: one gets the account');
  t.equal(await store.passwordResets.consume(r.token), null, 'used');
  t.equal(await store.passwordResets.find(r.token), null);

  const first = await store.passwordResets.create(a.id, 3_600_000);
  const forB = await store.passwordResets.create(b.id, 3_600_000);
  const second = await store.passwordResets.create(a.id, 3_600_000);
  t.equal(await store.passwordResets.consume(first.token), null, 'a newer link for the account replaces the older');
  t.ok(await store.passwordResets.find(forB.token), 'another account\'s link stays');
  now += 3_600_000;
  t.equal(await store.passwordResets.find(second.token), null, 'expired');
  t.equal(await store.passwordResets.consume(second.token), null, 'an expired token is refused');
  await store.passwordResets.create(b.id, 1000);
  t.equal(await raw.value('SELECT COUNT(*) FROM password_resets'), 1, 'expired tokens are deleted');
});

backends(t, 'payments: pending until confirmed, credited exactly once, failures never undo a confirmation', async (t, backend) => {
  const { store } = await freshStore(t, backend);
  const a = await seedAccount(store, 0);
  const p = await store.payments.create({ accountId: a.accountId, providerRef: 'cs_1', amountNano: 25 * USD, method: 'card' });
  t.equal(p.status, 'pending');
  await t.rejects(store.payments.create({ accountId: a.accountId, providerRef: 'cs_1', amountNano: 25 * USD, method: 'card' }), { code: 'conflict' });
  t.equal((await store.ledger.balance(a.accountId)).balance, 0, 'nothing credited while pending');

  const first = await store.payments.confirm('cs_1');
  t.equal(first?.credited, true);
  t.equal(first?.payment.status, 'confirmed');
  t.equal((await store.ledger.balance(a.accountId)).balance, 25 * USD, 'the running ledger sees the credit at once');
  t.equal((await store.payments.confirm('cs_1'))?.credited, false, 'a second confirmation credits nothing');
  t.equal((await store.payments.fail('cs_1'))?.status, 'confirmed', 'a late failure does not undo it');
  t.equal(await store.payments.confirm('cs_unknown'), null);
  t.equal(await store.payments.fail('cs_unknown'), null);

  await store.payments.create({ accountId: a.accountId, providerRef: 'cs_2', amountNano: 10 * USD, method: 'stablecoin' });
  t.equal((await store.payments.fail('cs_2'))?.status, 'failed');
  t.equal((await store.ledger.balance(a.accountId)).balance, 25 * USD, 'a failed payment credits nothing');

  await store.payments.create({ accountId: a.accountId, providerRef: 'cs_3', amountNano: 5 * USD, method: 'card' });
  const all = await Promise.all(Array.from({ length: 20 }, () => store.payments.confirm('cs_3')));
  t.equal(all.filter((r) => r?.credited).length, 1, '20 confirmations at once: one credit');
  t.equal((await store.ledger.balance(a.accountId)).balance, 30 * USD);

  t.same((await store.payments.list(a.accountId)).map((x) => [x.providerRef, x.status, x.method]),
    [['cs_3', 'confirmed', 'card'], ['cs_2', 'failed', 'stablecoin'], ['cs_1', 'confirmed', 'card']], 'newest first');
  const entries = await store.ledger.entries(a.accountId);
  t.same(entries.map((e) => [e.kind, e.amountNano]), [['topup', 5 * USD], ['topup', 25 * USD]]);
  t.same(await checkInvariants(store), []);
});

backends(t, 'a payment confirmed by another process reaches this process\'s balance, still once', async (t, backend) => {
  const { store, dbPath } = await freshStore(t, backend);
  const a = await seedAccount(store, 1 * USD);
  await store.payments.create({ accountId: a.accountId, providerRef: 'cs_other', amountNano: 7 * USD, method: 'card' });
  const child = `
    import { openStore } from ${JSON.stringify(new URL('../../lib/store/index.ts', import.meta.url).pathname)};
    const s = openStore(${JSON.stringify(storeConfig(dbPath))});
    const r = await s.payments.confirm('cs_other');
    const again = await s.payments.confirm('cs_other');
    console.log(JSON.stringify([r.credited, again.credited]));
    await s.close();`;
  const run = spawnSync(process.execPath, [...process.execArgv, '--input-type=module', '-e', child], { encoding: 'utf8' });
  t.equal(run.status, 0, run.stderr);
  t.same(JSON.parse(run.stdout.trim().split('\n').at(-1)!), [true, false]);
  await store.sync();
  t.equal((await store.ledger.balance(a.accountId)).balance, 8 * USD, 'picked up on the next sync');
  t.equal((await store.payments.confirm('cs_other'))?.credited, false, 'and not credited again here');
  t.equal((await store.ledger.balance(a.accountId)).balance, 8 * USD);
  t.same(await checkInvariants(store), []);
});

function row(accountId: number, keyId: number, time: number, requestId: string, over: Partial<HistoryRow> = {}): HistoryRow {
  return {
    requestId, time, accountId, keyId, route: 'chat', model: 'test/gpt', listing: 'test/gpt@sim-chat', attempts: [],
    status: 'ok', httpStatus: 200, stream: false, usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 },
    holdNano: 100, costNano: 40, latencyMs: 12, ttfbMs: 5, error: null, ...over,
  };
}

backends(t, 'history: filters by model, status and time, pages with a cursor, written and queued rows alike', async (t, backend) => {
  const { store } = await freshStore(t, backend);
  const a = await seedAccount(store, 0);
  const b = await seedAccount(store, 0);
  const t0 = Date.UTC(2026, 2, 1);
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) {
    const id = `req_${String(i).padStart(26, '0')}`;
    ids.push(id);
    store.history.record(row(a.accountId, a.keyId, t0 + Math.floor(i / 2) * DAY, id, {
      model: i % 3 === 0 ? 'test/claude' : 'test/gpt', status: i % 4 === 0 ? 'error' : 'ok', costNano: i + 1,
    }));
    if (i === 7) await store.flush(); // some rows in the file, the rest still queued
  }
  store.history.record(row(b.accountId, b.keyId, t0, 'req_B'));
  const list = (q = {}) => store.history.list(a.accountId, { limit: 100, ...q }).then((rows) => rows.map((r) => r.requestId));

  t.same(await list(), [...ids].reverse(), 'newest first; ties broken by the larger id; no rows of other accounts');
  t.same(await list({ model: 'test/claude' }), ids.filter((_, i) => i % 3 === 0).reverse());
  t.same(await list({ status: 'error' }), ids.filter((_, i) => i % 4 === 0).reverse());
  t.same(await list({ from: t0 + 2 * DAY, to: t0 + 4 * DAY }), ids.slice(4, 8).reverse(), 'from inclusive, to exclusive');
  t.same(await list({ model: 'test/gpt', status: 'ok', from: t0 + DAY }), ids.filter((_, i) => i >= 2 && i % 3 !== 0 && i % 4 !== 0).reverse());

  const pages: string[][] = [];
  let after: { time: number; requestId: string } | undefined;
  for (;;) {
    const page = await store.history.list(a.accountId, { limit: 5, after });
    if (page.length === 0) break;
    pages.push(page.map((r) => r.requestId));
    after = { time: page.at(-1)!.time, requestId: page.at(-1)!.requestId };
  }
  t.same(pages.flat(), [...ids].reverse(), 'paging visits every row once, in order');
  t.equal(pages.length, 3);

  const days = await store.history.daily(a.accountId, t0, t0 + 30 * DAY);
  t.same(days, Array.from({ length: 6 }, (_, d) => ({ day: t0 + d * DAY, requests: 2, costNano: 2 * d + 1 + 2 * d + 2 })), 'two requests a day, their cost summed');
  await store.flush();
  t.same(await store.history.daily(a.accountId, t0, t0 + 30 * DAY), days, 'the same once everything is written');
  t.same(await store.history.daily(a.accountId, t0 + DAY, t0 + 2 * DAY), [days[1]], 'only days in range');
});

backends(t, 'statement: grants, top-ups and adjustments one by one, charges summed per UTC day, adding up to the balance', async (t, backend) => {
  let now = Date.UTC(2026, 10, 10, 9);
  const { store, dbPath } = await freshStore(t, backend, { clock: () => now });
  const a = await seedAccount(store, 0);
  const other = await seedAccount(store, 50 * USD); // another account's movements stay out
  await store.ledger.grant(a.accountId, 20 * USD, 'welcome credit');
  await store.payments.create({ accountId: a.accountId, providerRef: 'cs_top', amountNano: 10 * USD, method: 'card' });
  await store.payments.confirm('cs_top');
  const charge = async (nano: number, keyId = a.keyId, accountId = a.accountId) => {
    const r = await store.ledger.reserve({ accountId, keyId, amount: nano, monthlyLimitNano: null });
    if (!r.ok) throw new Error('refused');
    await store.ledger.settle(r.hold.id, nano);
  };
  await charge(1_234_567); // day 1: two charges
  now += 3 * 3_600_000;
  await charge(5_300_001);
  await charge(9_999, other.keyId, other.accountId);
  now += DAY; // day 2: one
  await charge(250_000_000);
  now += 2 * DAY; // day 4: one, after an adjustment an operator posted by hand
  const db = await openSql(dbPath);
  t.teardown(() => db.close());
  // No command posts adjustments yet: one written as another process would, journal row and balance.
  await db.exec(`INSERT INTO journal (account_id, kind, amount, note, created_at) VALUES (${a.accountId}, 'adjustment', -1000000000, 'refund of a double charge, reversed', ${now});
    UPDATE balances SET balance = balance - 1000000000 WHERE account_id = ${a.accountId};`);
  await store.sync();
  await charge(7);
  await store.flush();

  const s = await store.ledger.statement(a.accountId);
  const day1 = Date.UTC(2026, 10, 10);
  t.same(s.charges, [
    { day: day1 + 3 * DAY, count: 1, amountNano: -7 },
    { day: day1 + DAY, count: 1, amountNano: -250_000_000 },
    { day: day1, count: 2, amountNano: -6_534_568 },
  ], 'charges per UTC day, newest first, this account only');
  t.same(s.credits.map((e) => [e.kind, e.amountNano, e.note]), [
    ['adjustment', -1 * USD, 'refund of a double charge, reversed'], ['topup', 10 * USD, 'payment cs_top'], ['grant', 20 * USD, 'welcome credit'],
  ], 'every other entry, newest first');
  const sum = [...s.credits, ...s.charges].reduce((x, e) => x + e.amountNano, 0);
  t.equal(sum, (await store.ledger.balance(a.accountId)).balance, 'they sum to the balance exactly');
  t.equal(sum, 30 * USD - 1 * USD - 6_534_568 - 250_000_000 - 7);
  t.same(await store.ledger.statement(9_999_999), { credits: [], charges: [] }, 'an account without movements');
});

backends(t, 'payments: a failure keeps the provider\'s reason, a cancel ends only a pending payment, byId', async (t, backend) => {
  const { store } = await freshStore(t, backend);
  const a = await seedAccount(store, 0);
  const p = await store.payments.create({ accountId: a.accountId, providerRef: 'cs_declined', amountNano: 25 * USD, method: 'card' });
  t.equal(p.failureReason, null);
  const failed = await store.payments.fail('cs_declined', 'Your card was declined.');
  t.same([failed?.status, failed?.failureReason], ['failed', 'Your card was declined.']);
  t.equal((await store.payments.byId(p.id))?.failureReason, 'Your card was declined.', 'kept');
  t.equal((await store.payments.cancel('cs_declined'))?.status, 'failed', 'a failed payment is not cancelled later');

  await store.payments.create({ accountId: a.accountId, providerRef: 'cs_changed_mind', amountNano: 10 * USD, method: 'card' });
  t.equal((await store.payments.cancel('cs_changed_mind'))?.status, 'cancelled');
  t.equal((await store.payments.fail('cs_changed_mind'))?.status, 'cancelled', 'the session\'s later expiry event leaves it cancelled');
  t.equal(await store.payments.confirm('cs_changed_mind').then((r) => r?.credited), true, 'Stripe\'s word that it was paid after all still credits it');
  t.equal(await store.payments.cancel('cs_unknown'), null);

  await store.payments.create({ accountId: a.accountId, providerRef: 'cs_paid', amountNano: 5 * USD, method: 'stablecoin' });
  await store.payments.confirm('cs_paid');
  t.equal((await store.payments.cancel('cs_paid'))?.status, 'confirmed', 'a confirmed payment is never cancelled');
  const paid = await store.payments.byRef('cs_paid');
  t.same(await store.payments.byId(paid!.id), paid);
  t.equal(await store.payments.byId(987_654), null);
});
