// The dashboard's security habits over plain HTTP: cookie flags, CSRF tokens and cross-site posts,
// no state change on GET, login rate limits, closed sign-up, escaping, and one account never seeing
// or changing another's keys, requests or money.
import t from 'tap';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { DashboardClient } from './client.js';

let gw: TestGateway;
t.before(async () => {
  // trust_proxy: each test names its own client address in X-Forwarded-For, so rate limits of one
  // test do not reach the others.
  gw = await startGateway({ configure: (c) => { c.dashboard = { trust_proxy: true }; } });
});
t.teardown(() => gw.close());

let n = 0;
const fresh = () => `user${++n}@example.com`;

async function apiCall(key: string): Promise<{ status: number; requestId: string }> {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'test/gpt', max_tokens: 20, messages: [{ role: 'user', content: 'Hi <<sim words=3>>' }] }),
  });
  await r.arrayBuffer();
  const requestId = r.headers.get('x-request-id')!;
  if (r.status === 200) await gw.gateway.requestFinished(requestId);
  return { status: r.status, requestId };
}

t.test('session cookies: HttpOnly, SameSite, scoped to /dashboard; Secure over TLS', async (t) => {
  const c = new DashboardClient(gw.url);
  await c.get('/dashboard/signup');
  const r = await c.post('/dashboard/signup', { email: fresh(), password: 'long enough 1' });
  t.equal(r.status, 303);
  const session = r.setCookies.find((s) => s.startsWith('gw_session='))!;
  t.match(session, /; HttpOnly/);
  t.match(session, /; SameSite=Lax/);
  t.match(session, /; Path=\/dashboard/);
  t.notMatch(session, /Secure/, 'not Secure over plain http (the browser would drop it)');

  const tls = new DashboardClient(gw.url);
  const behindTls = { 'x-forwarded-proto': 'https' };
  await tls.get('/dashboard/login', behindTls);
  const signup = await tls.post('/dashboard/signup', { email: fresh(), password: 'long enough 1' }, { headers: behindTls });
  t.match(signup.setCookies.find((s) => s.startsWith('gw_session='))!, /; Secure/, 'Secure behind a TLS proxy');

  const page = await fetch(`${gw.url}/dashboard/login`);
  t.match(page.headers.get('content-security-policy')!, /default-src 'none'/);
  t.match(page.headers.get('content-security-policy')!, /frame-ancestors 'none'/);
  t.equal(page.headers.get('x-frame-options'), 'DENY');
  t.equal(page.headers.get('cache-control'), 'no-store');
});

t.test('every state-changing post needs its CSRF token and must not come from another site', async (t) => {
  const email = fresh();
  const victim = await DashboardClient.signUp(gw.url, email);
  await gw.store.ledger.grant((await gw.store.accounts.byEmail(email))!.id, 1_000_000_000);
  const { secret } = await victim.createKey('precious');
  const keyId = (await gw.store.keys.findByPrefix(secret.slice(0, 19)))[0].id;
  const revoke = `/dashboard/keys/${keyId}/revoke`;
  const other = await DashboardClient.signUp(gw.url, fresh());

  const attempts: [string, Parameters<DashboardClient['post']>[2]][] = [
    ['no token', { csrf: null }],
    ['a wrong token', { csrf: 'x'.repeat(43) }],
    ['another session\'s token', { csrf: other.csrf }],
    ['a cross-site Origin', { origin: 'http://evil.example' }],
    ['an opaque Origin', { origin: 'null' }],
    ['Sec-Fetch-Site: cross-site, valid token', { headers: { 'sec-fetch-site': 'cross-site' } }],
    ['Sec-Fetch-Site: same-site, valid token', { headers: { 'sec-fetch-site': 'same-site' } }],
  ];
  for (const [name, opts] of attempts) {
    const r = await victim.post(revoke, {}, opts);
    t.equal(r.status, 403, name);
  }
  t.equal((await gw.store.keys.get(keyId))?.revokedAt, null, 'the key is still active');
  t.equal((await apiCall(secret)).status, 200);

  const json = await fetch(`${gw.url}${revoke}`, { method: 'POST', headers: { cookie: `gw_session=${victim.cookies.get('gw_session')}`, 'content-type': 'application/json', origin: gw.url }, body: '{}' });
  t.equal(json.status, 415, 'only form posts');

  t.equal((await victim.get(revoke)).status, 200, 'GET shows a confirmation page');
  t.equal((await gw.store.keys.get(keyId))?.revokedAt, null, 'and changes nothing');
  t.equal((await victim.get('/dashboard/logout')).status, 405, 'logging out is a POST');
  t.equal((await victim.get('/dashboard')).status, 200, 'still logged in');

  await victim.get(revoke);
  const ok = await victim.post(revoke, {});
  t.same([ok.status, ok.location], [303, '/dashboard/keys?notice=revoked'], 'the genuine form works');
  t.equal((await apiCall(secret)).status, 401, 'a revoked key is refused at once');
});

t.test('behind a proxy: the forwarded host is this site; a page takes only its own methods', async (t) => {
  const c = await DashboardClient.signUp(gw.url, fresh());
  await c.get('/dashboard/routing');
  const proxied = { origin: 'https://gw.example.com', headers: { 'x-forwarded-host': 'gw.example.com', 'x-forwarded-proto': 'https' } };
  t.equal((await c.post('/dashboard/routing', { allow_mode: 'all', allow: 'test/gpt' }, proxied)).status, 303, 'Origin matches X-Forwarded-Host (trust_proxy)');
  t.equal((await c.post('/dashboard/routing', { allow_mode: 'all', allow: 'test/gpt' }, { origin: 'https://gw.example.com' })).status, 403, 'without it, another site');
  const put = await fetch(`${gw.url}/dashboard/routing`, { method: 'PUT', headers: { cookie: `gw_session=${c.cookies.get('gw_session')}` } });
  t.equal(put.status, 405);
  t.equal(put.headers.get('allow'), 'GET, POST');
});

t.test('one account never sees or changes another account\'s keys, requests or money', async (t) => {
  const aliceEmail = fresh();
  const alice = await DashboardClient.signUp(gw.url, aliceEmail);
  const bob = await DashboardClient.signUp(gw.url, fresh());
  const aliceId = (await gw.store.accounts.byEmail(aliceEmail))!.id;
  await gw.store.ledger.grant(aliceId, 5_000_000_000, 'test');
  const { secret } = await alice.createKey('alice-key');
  const aliceKey = (await gw.store.keys.findByPrefix(secret.slice(0, 19)))[0];
  const call = await apiCall(secret);
  t.equal(call.status, 200);

  const keys = await bob.get('/dashboard/keys');
  t.notMatch(keys.text, /alice-key/, 'bob\'s key list has no alice key');
  t.notMatch(keys.text, new RegExp(aliceKey.prefix), 'nor its prefix');
  t.equal((await bob.get(`/dashboard/keys/${aliceKey.id}/revoke`)).status, 404, 'bob cannot open the revoke page of alice\'s key');
  t.equal((await bob.get(`/dashboard/keys/${aliceKey.id}/edit`)).status, 404, 'nor its edit page');
  t.equal((await bob.post(`/dashboard/keys/${aliceKey.id}/edit`, { name: 'mine now' })).status, 404, 'nor change it');
  t.equal((await bob.get(`/dashboard/keys/${aliceKey.id}/created`)).status, 404, 'nor see its created page');
  t.equal((await gw.store.keys.get(aliceKey.id))!.name, aliceKey.name);
  const revoke = await bob.post(`/dashboard/keys/${aliceKey.id}/revoke`, {});
  t.equal(revoke.status, 404, 'nor revoke it');
  t.equal((await gw.store.keys.get(aliceKey.id))?.revokedAt, null);

  t.equal((await bob.get(`/dashboard/requests/${call.requestId}`)).status, 404, 'bob cannot open alice\'s request');
  const search = await bob.get(`/dashboard/requests?q=${call.requestId}`);
  t.match(search.text, /data-testid="no-match"/, 'nor find it by id');
  t.notMatch((await bob.get('/dashboard/requests')).text, new RegExp(call.requestId), 'nor list it');
  t.match((await alice.get(`/dashboard/requests?q=${call.requestId}`)).text, new RegExp(`data-request-id="${call.requestId}"`), 'alice finds it');
  t.equal((await alice.get(`/dashboard/requests/${call.requestId}`)).status, 200);

  const bobHome = await bob.get('/dashboard');
  t.match(bobHome.text, /data-testid="balance">\$0\.00</, 'bob sees his own balance only');
  t.match((await alice.get('/dashboard')).text, /data-testid="balance">(<span title="\$4\.99[0-9]+">)?\$4\.99</, 'alice sees hers, less the request');

  await bob.get('/dashboard/routing');
  t.equal((await bob.post('/dashboard/routing', { allow_mode: 'all', allow: 'test/claude' })).status, 303);
  t.same((await gw.store.routing.get(aliceId)).deny, [], 'bob\'s routing change does not touch alice');
  t.equal((await apiCall(secret)).status, 200);
});

t.test('anonymous visitors are sent to the login page; logging out ends the session', async (t) => {
  const anon = new DashboardClient(gw.url);
  for (const path of ['/dashboard', '/dashboard/keys', '/dashboard/credits', '/dashboard/requests/req_01ARZ3NDEKTSV4RRFFQ69G5FAV']) {
    const r = await anon.get(path);
    t.same([r.status, r.location], [303, `/dashboard/login?next=${encodeURIComponent(path)}`], path);
  }
  await anon.get('/dashboard/login');
  const post = await anon.post('/dashboard/keys', { name: 'x' });
  t.equal(post.status, 401, 'a post without a session gets the login page, acting on nothing');
  t.match(post.text, /Your session has ended/);
  t.match(post.text, /name="kept" value="name=x"/, 'its fields kept (not the token) for after the login');

  const email = fresh();
  const user = await DashboardClient.signUp(gw.url, email, 'the password 1');
  const token = user.cookies.get('gw_session')!;
  const out = await user.post('/dashboard/logout', {});
  t.same([out.status, out.location], [303, '/dashboard/login?notice=logged-out']);
  t.match(out.setCookies.find((c) => c.startsWith('gw_session='))!, /Max-Age=0/);
  const stale = await fetch(`${gw.url}/dashboard`, { redirect: 'manual', headers: { cookie: `gw_session=${token}` } });
  t.equal(stale.status, 303, 'the old session token no longer works');

  const back = new DashboardClient(gw.url);
  await back.get('/dashboard/login?next=/dashboard/keys');
  const login = await back.post('/dashboard/login', { email, password: 'the password 1', next: '/dashboard/keys' });
  t.same([login.status, login.location], [303, '/dashboard/keys'], 'back where the visitor wanted to go');
  t.not(back.cookies.get('gw_session'), token, 'a new session token');
  const third = new DashboardClient(gw.url);
  await third.get('/dashboard/login');
  const evil = await third.post('/dashboard/login', { email, password: 'the password 1', next: '//evil.example/x' });
  t.equal(evil.location, '/dashboard', 'never redirected off the site');
});

t.test('failed logins slow down one email at one address, never lock its owner out; one address cannot try many emails fast', async (t) => {
  const email = fresh();
  await DashboardClient.signUp(gw.url, email, 'right password');
  const c = new DashboardClient(gw.url);
  const from = (ip: string) => ({ headers: { 'x-forwarded-for': ip } });
  await c.get('/dashboard/login');
  for (let i = 0; i < 5; i++) {
    const r = await c.post('/dashboard/login', { email, password: `wrong ${i}` }, from('10.0.0.1'));
    t.equal(r.status, 401, `failure ${i + 1}`);
    t.notOk(r.setCookies.some((s) => s.startsWith('gw_session=')), 'no session');
  }
  const slowed = await c.post('/dashboard/login', { email, password: 'right password' }, from('10.0.0.1'));
  t.equal(slowed.status, 429, 'the attacking address must wait, even with the right password');
  t.match(slowed.text, /Too many attempts. Try again in 1 second\./);
  t.equal(slowed.headers.get('retry-after'), '1');
  t.notOk(slowed.setCookies.some((s) => s.startsWith('gw_session=')));
  const owner = await c.post('/dashboard/login', { email, password: 'right password' }, from('10.0.0.2'));
  t.equal(owner.status, 303, 'the same email from another address logs in');
  t.ok(owner.setCookies.some((s) => s.startsWith('gw_session=')));

  // Guesses sent at once are counted as they arrive, not once their passwords have been checked.
  const e = new DashboardClient(gw.url);
  await e.get('/dashboard/login');
  const burst = await Promise.all(Array.from({ length: 12 }, (_, i) => e.post('/dashboard/login', { email, password: `guess ${i}` }, from('10.0.0.3'))));
  t.same(burst.map((r) => r.status).sort(), [...Array(5).fill(401), ...Array(7).fill(429)], '5 guesses checked, the rest told to wait');

  const d = new DashboardClient(gw.url);
  await d.get('/dashboard/login');
  for (let i = 0; i < 20; i++) {
    if ((await d.post('/dashboard/login', { email: `nobody${i}@example.com`, password: 'x' }, from('10.9.9.9'))).status !== 401) t.fail(`attempt ${i} not refused`);
  }
  const byAddress = await d.post('/dashboard/login', { email, password: 'right password' }, from('10.9.9.9'));
  t.equal(byAddress.status, 429, 'an address with 20 failures must wait');
  t.match(byAddress.text, /Try again in 1 second\./, 'and is told how long');
  t.equal((await d.post('/dashboard/login', { email, password: 'right password' }, from('10.9.9.10'))).status, 303, 'other addresses are not');
});

t.test('user text is escaped, never markup', async (t) => {
  const c = await DashboardClient.signUp(gw.url, fresh());
  const { page } = await c.createKey('<script>alert(1)</script>"><img src=x onerror=alert(2)>');
  t.notMatch(page.text, /<script>alert/);
  t.notMatch(page.text, /<img src=x/);
  t.match(page.text, /&lt;script&gt;alert\(1\)&lt;\/script&gt;&quot;&gt;&lt;img src=x onerror=alert\(2\)&gt;/);
  const list = await c.get('/dashboard/keys');
  t.notMatch(list.text, /<script>alert/);
  const search = await c.get('/dashboard/requests?q=%3Cscript%3Ealert(3)%3C/script%3E');
  t.notMatch(search.text, /<script>alert\(3\)/);
  t.match(search.text, /&lt;script&gt;alert\(3\)/);
});

t.test('the key is shown once: the list shows only its prefix', async (t) => {
  const c = await DashboardClient.signUp(gw.url, fresh());
  const { secret, page } = await c.createKey('ci', { monthly_limit: '12.50', models: ['test/gpt'] });
  t.match(page.text, /only time the full key is shown/);
  const key = (await gw.store.keys.findByPrefix(secret.slice(0, 19)))[0];
  t.equal(key.monthlyLimitNano, 12_500_000_000);
  t.same(key.allowedModels, ['test/gpt']);
  const list = await c.get('/dashboard/keys');
  t.notMatch(list.text, new RegExp(secret), 'the full key is not on the list');
  t.match(list.text, new RegExp(`${key.prefix}…`));
  t.match(list.text, /of \$12\.50/);
  const bad = await c.post('/dashboard/keys', { name: 'x', monthly_limit: 'ten dollars' });
  t.equal(bad.status, 400);
  t.match(bad.text, /monthly limit must be an amount/);
});

t.test('sign-up can be closed by the operator', async (t) => {
  const closed = { ...gw.config, dashboard: { ...gw.config.dashboard, signup: 'closed' as const } };
  await gw.gateway.reload(closed);
  t.teardown(() => gw.gateway.reload({ ...closed, dashboard: { ...closed.dashboard, signup: 'open' } }));
  const c = new DashboardClient(gw.url);
  const page = await c.get('/dashboard/signup');
  t.equal(page.status, 403);
  t.match(page.text, /Sign-up is closed/);
  const before = await gw.store.accounts.count();
  const r = await c.post('/dashboard/signup', { email: fresh(), password: 'long enough 1' });
  t.equal(r.status, 403);
  t.equal(await gw.store.accounts.count(), before, 'no account was made');
  t.match((await c.get('/dashboard/login')).text, /created by the operator/);
});
