// The API Keys page: a key's own requests and tokens per minute from the creation form (empty = the
// gateway's default), shown in the key list, and enforced on the API.
import t from 'tap';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { DashboardClient } from './client.js';

let gw: TestGateway;
t.before(async () => {
  gw = await startGateway({ configure: (c) => { c.rate_limits = { requests_per_minute: 600, tokens_per_minute: 2_000_000 }; } });
});
t.teardown(() => gw.close());

let n = 0;
const fresh = () => `limits${++n}@example.com`;

const chat = (key: string) => fetch(`${gw.url}/v1/chat/completions`, {
  method: 'POST',
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'test/gpt', max_tokens: 20, messages: [{ role: 'user', content: 'Hi <<sim words=3>>' }] }),
}).then(async (r) => ({ status: r.status, headers: r.headers, body: await r.text() }));

t.test('the form sets a key\'s own limits; the list shows them, or the defaults', async (t) => {
  const email = fresh();
  const c = await DashboardClient.signUp(gw.url, email);
  await gw.store.ledger.grant((await gw.store.accounts.byEmail(email))!.id, 1_000_000_000, 'test credit');
  const form = await c.get('/dashboard/keys');
  t.match(form.text, /<input name="rpm"[^>]*placeholder="default: 600"/);
  t.match(form.text, /<input name="tpm"[^>]*placeholder="default: 2000000"/);

  const { secret } = await c.createKey('batch', { rpm: '2', tpm: '50,000' });
  const key = (await gw.store.keys.findByPrefix(secret.slice(0, 19)))[0];
  t.match(key, { rpm: 2, tpm: 50_000 }, 'stored on the key');
  await c.createKey('plain', { rpm: '', tpm: ' ' });

  const list = await c.get('/dashboard/keys');
  const row = (name: string) => new RegExp(`<tr[^>]*>\\s*<td[^>]*><div class="wrap-value">${name}</div>[\\s\\S]*?</tr>`).exec(list.text)?.[0] ?? '';
  t.match(row('batch'), /class="rate-limits">2 req\/min<br>50,000 tok\/min<\/td>/);
  t.match(row('plain'), /600 req\/min \(default\)[\s\S]*2,000,000 tok\/min \(default\)/);

  // The API enforces what the form set.
  const answers = [await chat(secret), await chat(secret), await chat(secret)];
  t.same(answers.map((a) => a.status), [200, 200, 429]);
  t.equal(answers[0].headers.get('x-ratelimit-limit-tokens'), '50000');
});

t.test('a limit that is not a whole number of at least 1 is refused, the form kept', async (t) => {
  const c = await DashboardClient.signUp(gw.url, fresh());
  for (const [field, value] of [['rpm', '0'], ['rpm', '1.5'], ['rpm', '-3'], ['tpm', 'lots'], ['tpm', '99999999999999999999']]) {
    await c.get('/dashboard/keys');
    const r = await c.post('/dashboard/keys', { name: 'bad', [field]: value });
    t.equal(r.status, 400, `${field}=${value}`);
    t.match(r.text, field === 'rpm' ? /Requests per minute must be a whole number of at least 1/ : /Tokens per minute must be a whole number/);
    t.match(r.text, new RegExp(`name="${field}" value="${value.replace('.', '\\.')}"`), 'what was typed is kept');
  }
  const account = await gw.store.accounts.byEmail(`limits${n}@example.com`);
  t.same(await gw.store.keys.list(account!.id), [], 'no key was created');
});
