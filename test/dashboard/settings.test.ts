// Account settings and reset links over plain HTTP (no Chromium needed): the password change is
// throttled as logins are (and shares their counters), checks CSRF, keeps the session it came from;
// the sessions list shows no secret; a reset link works once even when posted twice at once, and a
// bad link gets a page, not an error.
import t from 'tap';
import { createHash } from 'node:crypto';
import { resetLink, RESET_TTL_MS } from '../../lib/dashboard/reset-link.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { DashboardClient } from './client.js';

let gw: TestGateway;
t.before(async () => {
  // trust_proxy: each test names its own client address, so the limits of one do not reach another.
  gw = await startGateway({ configure: (c) => { c.dashboard = { trust_proxy: true }; } });
});
t.teardown(() => gw.close());

let n = 0;
async function loggedIn(password = 'the first password'): Promise<{ c: DashboardClient; email: string; accountId: number; from: Record<string, string> }> {
  const email = `settings${++n}@example.com`;
  const a = await gw.store.accounts.create({ email, password });
  const from = { 'x-forwarded-for': `10.9.0.${n}` };
  const c = new DashboardClient(gw.url);
  await c.get('/dashboard/login', from);
  const r = await c.post('/dashboard/login', { email, password }, { headers: from });
  if (r.status !== 303) throw new Error(`login: ${r.status}`);
  return { c, email, accountId: a.id, from };
}

t.test('change password: wrong current password is a field error; throttled with the logins of that email; CSRF checked', async (t) => {
  const { c, email, from } = await loggedIn();
  await c.get('/dashboard/settings', from);
  const wrong = await c.post('/dashboard/settings/password', { current_password: 'not it at all', new_password: 'the second password' }, { headers: from });
  t.equal(wrong.status, 400);
  t.match(wrong.text, /name="current_password"[^>]*aria-invalid="true" aria-describedby="current_password-error"/);
  t.match(wrong.text, /<span class="field-error" id="current_password-error">That is not your current password\.<\/span>/);
  const short = await c.post('/dashboard/settings/password', { current_password: 'the first password', new_password: 'short' }, { headers: from });
  t.equal(short.status, 400, 'the one password rule');
  t.match(short.text, /name="new_password"[^>]*aria-invalid="true"/);

  const noCsrf = await c.post('/dashboard/settings/password', { current_password: 'the first password', new_password: 'the second password' }, { csrf: null, headers: from });
  t.equal(noCsrf.status, 403, 'no CSRF token: refused');
  const crossSite = await c.post('/dashboard/settings/password', { current_password: 'the first password', new_password: 'the second password' }, { origin: 'https://evil.example', headers: from });
  t.equal(crossSite.status, 403, 'from another site: refused');
  t.ok(await gw.store.accounts.checkPassword(email, 'the first password'), 'nothing changed');

  for (let i = 0; i < 4; i++) await c.post('/dashboard/settings/password', { current_password: `guess ${i} guess`, new_password: 'the second password' }, { headers: from });
  const slowed = await c.post('/dashboard/settings/password', { current_password: 'the first password', new_password: 'the second password' }, { headers: from });
  t.equal(slowed.status, 429, 'after 5 wrong passwords the next must wait, even the right one');
  t.match(slowed.text, /Too many attempts\. Try again in/);
  t.ok(slowed.headers.get('retry-after'));
  const login = new DashboardClient(gw.url);
  await login.get('/dashboard/login', from);
  t.equal((await login.post('/dashboard/login', { email, password: 'the first password' }, { headers: from })).status, 429, 'the login of that email from there waits too');
  t.ok(await gw.store.accounts.checkPassword(email, 'the first password'), 'still the first password');
});

t.test('change password: the other sessions end, this one stays; the sessions list shows no token or hash', async (t) => {
  const { c, email, accountId, from } = await loggedIn();
  const other = await gw.store.sessions.create(accountId, 3_600_000);
  const page = await c.get('/dashboard/settings', from);
  t.equal(page.status, 200);
  t.equal(page.text.match(/data-testid="session"/g)?.length, 2);
  t.equal(page.text.match(/data-current/g)?.length, 1);
  const mine = c.cookies.get('gw_session')!;
  for (const token of [mine, other.token]) {
    const hash = createHash('sha256').update(token).digest();
    for (const shown of [token, hash.toString('hex'), hash.toString('base64'), hash.toString('base64url')]) t.notOk(page.text.includes(shown), 'no token or hash on the page');
  }
  const r = await c.post('/dashboard/settings/password', { current_password: 'the first password', new_password: 'the second password' }, { headers: from });
  t.equal(r.status, 303);
  t.equal(r.location, '/dashboard/settings?notice=password-changed&ended=1');
  t.equal(await gw.store.sessions.get(other.token), null, 'the other session ended');
  const after = await c.get(r.location!, from);
  t.equal(after.status, 200, 'this one is still logged in');
  t.match(after.text, /Your password was changed and 1 other session was signed out\./);
  t.ok(await gw.store.accounts.checkPassword(email, 'the second password'));
});

t.test('reset link: two posts at once, one sets the password; a used, unknown or missing token gets a page', async (t) => {
  const { email, accountId } = await loggedIn();
  const { token } = await gw.store.passwordResets.create(accountId, RESET_TTL_MS);
  const link = resetLink(token);
  const [a, b] = [new DashboardClient(gw.url), new DashboardClient(gw.url)];
  for (const c of [a, b]) t.equal((await c.get(link)).status, 200);
  const posts = await Promise.all([a, b].map((c, i) => c.post('/dashboard/reset', { token, new_password: `reset password ${i}`, confirm_password: `reset password ${i}` })));
  t.same(posts.map((p) => p.status).sort(), [303, 404], 'one set it, the other was told the link does not work');
  const winner = posts.findIndex((p) => p.status === 303);
  t.equal(posts[winner].location, '/dashboard/login?notice=password-reset');
  t.ok(await gw.store.accounts.checkPassword(email, `reset password ${winner}`), 'the winner\'s password');
  t.match(posts[1 - winner].text, /This reset link does not work/);
  t.equal((await gw.store.sessions.listFor(accountId)).length, 0, 'every session of the account ended');

  for (const path of [link, '/dashboard/reset?token=nonsense', '/dashboard/reset', `/dashboard/reset?token=${'A'.repeat(43)}`]) {
    const r = await a.get(path);
    t.equal(r.status, 404, path);
    t.match(r.text, /This reset link does not work[\s\S]*Ask your operator for a new reset link/, path);
  }
  const forged = await a.post('/dashboard/reset', { token: 'A'.repeat(43), new_password: 'some password', confirm_password: 'some password' });
  t.equal(forged.status, 404, 'an unknown token posted: the same page');
});
