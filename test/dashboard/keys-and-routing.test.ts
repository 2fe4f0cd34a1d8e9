// API Keys and Routing pages as a browser without JavaScript uses them: a new key by
// post/redirect/get (shown once; reloading its page creates nothing and shows it no more), a
// limit of 0 and duplicate names refused, a key edited, revoked keys behind a toggle, spend and
// holds against the limit; routing that leaves no model usable asked about before saving and
// reported as a warning after.
import t from 'tap';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { DashboardClient } from './client.js';

let gw: TestGateway;
t.before(async () => {
  gw = await startGateway({});
});
t.teardown(() => gw.close());

let n = 0;
const fresh = () => `keys-routing${++n}@example.com`;
const accountOf = async (email: string) => (await gw.store.accounts.byEmail(email))!.id;

t.test('a new key: post, redirect, its page shows the key once; a reload creates no key and shows it no more', async (t) => {
  const email = fresh();
  const c = await DashboardClient.signUp(gw.url, email);
  await c.get('/dashboard/keys');
  const posted = await c.post('/dashboard/keys', { name: 'once' });
  t.equal(posted.status, 303, 'the form post answers with a redirect, so Back and reload never post it again');
  t.match(posted.location, /^\/dashboard\/keys\/\d+\/created$/);
  t.notMatch(posted.setCookies.join(';'), /sk-service-/, 'the secret is not in a cookie in clear');
  const shown = await c.get(posted.location!);
  t.equal(shown.status, 200);
  const secret = /value="(sk-service-[A-Za-z0-9]{40})"/.exec(shown.text)?.[1];
  t.ok(secret, 'the page the form redirects to shows the key');
  t.match(shown.setCookies.join(';'), /gw_new_key=;.*Max-Age=0/, 'and forgets it');
  const again = await c.get(posted.location!);
  t.equal(again.status, 200);
  t.notMatch(again.text, /sk-service-[A-Za-z0-9]{40}/, 'a reload does not show it again');
  t.match(again.text, /was shown once/);
  t.equal((await gw.store.keys.list(await accountOf(email))).length, 1, 'and creates no other key');

  // Another session of the same account, given the cookie, learns nothing from it.
  await c.get('/dashboard/keys');
  const second = await c.post('/dashboard/keys', { name: 'twice' });
  const sealed = /gw_new_key=([^;]+)/.exec(second.setCookies.join(';'))![1];
  const other = new DashboardClient(gw.url);
  await other.get('/dashboard/login');
  await other.post('/dashboard/login', { email, password: 'correct horse battery' });
  other.cookies.set('gw_new_key', sealed);
  const stolen = await other.get(second.location!);
  t.notMatch(stolen.text, /sk-service-[A-Za-z0-9]{40}/, 'the cookie is sealed to the session that created the key');
});

t.test('a limit of 0 and a second active key of the same name are refused, saying why', async (t) => {
  const email = fresh();
  const c = await DashboardClient.signUp(gw.url, email);
  await c.get('/dashboard/keys');
  const zero = await c.post('/dashboard/keys', { name: 'zero', monthly_limit: '0.00' });
  t.equal(zero.status, 400);
  t.match(zero.text, /limit of \$0 would refuse every request/);
  await c.createKey('Production');
  await c.get('/dashboard/keys');
  const dup = await c.post('/dashboard/keys', { name: ' production ' });
  t.equal(dup.status, 400);
  t.match(dup.text, /already have an active key named “production”/);
  t.equal((await gw.store.keys.list(await accountOf(email))).length, 1);
  // A revoked key's name may be used again.
  const [old] = await gw.store.keys.list(await accountOf(email));
  await gw.store.keys.revoke(old.id);
  await c.createKey('Production');
});

t.test('a key\'s name, limit and models can be edited; the API uses the new settings', async (t) => {
  const email = fresh();
  const c = await DashboardClient.signUp(gw.url, email);
  await c.createKey('other');
  const { secret } = await c.createKey('ci', { monthly_limit: '5', models: ['test/gpt'] });
  const key = (await gw.store.keys.findByPrefix(secret.slice(0, 19)))[0];
  const form = await c.get(`/dashboard/keys/${key.id}/edit`);
  t.equal(form.status, 200);
  t.match(form.text, /name="name" value="ci"/);
  t.match(form.text, /name="monthly_limit" value="5.00"/);
  t.match(form.text, /value="test\/gpt" checked/);
  for (const [fields, why] of [[{ name: 'OTHER' }, /already have an active key named/], [{ name: 'ci', monthly_limit: '0' }, /limit of \$0/], [{ name: '' }, /Give the key a name/]] as const) {
    const bad = await c.post(`/dashboard/keys/${key.id}/edit`, fields);
    t.equal(bad.status, 400);
    t.match(bad.text, why);
  }
  const saved = await c.post(`/dashboard/keys/${key.id}/edit`, { name: 'deploy', monthly_limit: '7.25', models: ['test/claude'], rpm: '30' });
  t.same([saved.status, saved.location], [303, '/dashboard/keys?notice=updated']);
  t.match(await gw.store.keys.get(key.id), { name: 'deploy', monthlyLimitNano: 7_250_000_000, allowedModels: ['test/claude'], rpm: 30, tpm: null });
  const list = await c.get('/dashboard/keys?notice=updated');
  t.match(list.text, /The key was updated/);
  t.match(list.text, /deploy/);
  await gw.store.ledger.grant(await accountOf(email), 1_000_000_000);
  const call = (model: string) => fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 5, messages: [{ role: 'user', content: 'Hi' }] }),
  }).then(async (r) => { await r.arrayBuffer(); return r.status; });
  t.equal(await call('test/gpt'), 403, 'the model it no longer allows is refused');
  t.equal(await call('test/claude'), 200);
  await c.get('/dashboard/keys');
  await c.post(`/dashboard/keys/${key.id}/revoke`, {});
  t.equal((await c.get(`/dashboard/keys/${key.id}/edit`)).status, 303, 'a revoked key is not edited');
});

t.test('revoked keys are hidden behind a toggle', async (t) => {
  const c = await DashboardClient.signUp(gw.url, fresh());
  await c.createKey('kept');
  const { secret } = await c.createKey('gone');
  const gone = (await gw.store.keys.findByPrefix(secret.slice(0, 19)))[0];
  await gw.store.keys.revoke(gone.id);
  const list = await c.get('/dashboard/keys');
  t.match(list.text, />kept</);
  t.notMatch(list.text, />gone</, 'the revoked key is not listed');
  t.match(list.text, /<a href="\/dashboard\/keys\?revoked=show">Show 1 revoked key<\/a>/);
  const all = await c.get('/dashboard/keys?revoked=show');
  t.match(all.text, />gone<[\s\S]*Revoked/);
  t.match(all.text, /Hide revoked keys/);
});

t.test('spend and holds in flight against the limit; the hold explained; "limit reached"', async (t) => {
  const email = fresh();
  const c = await DashboardClient.signUp(gw.url, email);
  const accountId = await accountOf(email);
  await gw.store.ledger.grant(accountId, 10_000_000_000);
  const { secret } = await c.createKey('capped', { monthly_limit: '0.05' });
  const key = (await gw.store.keys.findByPrefix(secret.slice(0, 19)))[0];
  const row = (text: string) => new RegExp(`<tr[^>]*data-key-id="${key.id}"[\\s\\S]*?</tr>`).exec(text)![0];
  let list = await c.get('/dashboard/keys');
  t.notMatch(row(list.text), /held|Limit reached/);
  t.match(list.text, /its largest possible cost \(from its max_tokens\) is held against the key(&#39;|')s limit/);
  const hold = await gw.store.ledger.reserve({ accountId, keyId: key.id, amount: 30_000_000, monthlyLimitNano: key.monthlyLimitNano });
  t.ok(hold.ok);
  list = await c.get('/dashboard/keys');
  t.match(row(list.text), /\+ \$0\.03 held/);
  t.notMatch(row(list.text), /Limit reached/);
  const more = await gw.store.ledger.reserve({ accountId, keyId: key.id, amount: 20_000_000, monthlyLimitNano: key.monthlyLimitNano });
  t.ok(more.ok);
  list = await c.get('/dashboard/keys');
  t.match(row(list.text), /\+ \$0\.05 held[\s\S]*Limit reached/, 'spend and holds at the limit: reached');
  if (hold.ok) gw.store.ledger.release(hold.hold.id);
  if (more.ok) gw.store.ledger.release(more.hold.id);
});

t.test('routing that leaves no model usable: asked before saving, a warning after; never a success', async (t) => {
  const email = fresh();
  const c = await DashboardClient.signUp(gw.url, email);
  const accountId = await accountOf(email);
  const page = await c.get('/dashboard/routing');
  t.match(page.text, /2 of 2 models are usable under these settings/);
  t.equal((page.text.match(/<input type="checkbox"/g) ?? []).length, 2, 'one allow control per model');

  const asked = await c.post('/dashboard/routing', { allow_mode: 'list' });
  t.equal(asked.status, 409, 'nothing ticked: not saved yet');
  t.match(asked.text, /No model is usable under these settings/);
  t.match(asked.text, /Save anyway/);
  t.notMatch(asked.text, /notice-success/);
  t.same((await gw.store.routing.get(accountId)).allow, null, 'nothing was saved');

  const cap = await c.post('/dashboard/routing', { allow_mode: 'all', allow: ['test/gpt', 'test/claude'], price_cap_input: '0.001' });
  t.equal(cap.status, 409, 'a price cap below every offer also leaves none');

  const saved = await c.post('/dashboard/routing', { allow_mode: 'list', confirm: 'none-usable' });
  t.equal(saved.status, 303, 'saved when confirmed');
  t.same((await gw.store.routing.get(accountId)).allow, []);
  const after = await c.get(saved.location!);
  t.match(after.text, /notice-warning[^>]*>Routing settings saved, but no model is usable/);
  t.notMatch(after.text, /notice-success/);
  t.match(after.text, /0 of 2 models are usable/);

  const fixed = await c.post('/dashboard/routing', { allow_mode: 'all', allow: ['test/gpt'] });
  t.equal(fixed.status, 303);
  t.same(await gw.store.routing.get(accountId), { allow: null, deny: ['test/claude'], priceCapInput: null, priceCapOutput: null }, 'unticked models are denied; new ones allowed');
  t.match((await c.get(fixed.location!)).text, /notice-success[^>]*>Routing settings saved\. 1 of 2 models are usable/);
  const keyForm = (await c.get('/dashboard/keys')).text;
  t.match(keyForm, /value="test\/claude">[^]*?Not usable now: denied in your routing settings\./, 'the key form says which models routing makes of no use');
  t.notMatch(/value="test\/gpt">.*?<\/label>/.exec(keyForm)![0], /Not usable/);
});
