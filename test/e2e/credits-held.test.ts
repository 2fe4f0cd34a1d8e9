// The operator's view of money while requests are in flight: `gateway credits show`, run as its own
// process beside a serving gateway (which holds the database's lock), prints the balance, what open
// requests hold and what is available, in text and in --json; once the request ended, the hold is
// gone and the balance carries the actual charge. The dashboard's Credits page shows the same three.
import t from 'tap';
import http from 'node:http';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { childEnv, gatewayBin } from '../helpers/process.js';
import { lockDatabase } from '../../lib/store/sqlite/lock.js';
import { formatUsd } from '../../lib/store/money.js';
import { DashboardClient } from '../dashboard/client.js';

/** A chat upstream that answers each request only when the test lets it. */
const waiting: Array<() => void> = [];
let arrived: () => void = () => {};
const upstream = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    waiting.push(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
      id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'slow-up',
      choices: [{ index: 0, message: { role: 'assistant', content: 'late answer' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 10, completion_tokens: 7, total_tokens: 17 },
    })));
    arrived();
  });
});

let gw: TestGateway;
let configFile = '';
t.before(async () => {
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const port = (upstream.address() as AddressInfo).port;
  gw = await startGateway({
    configure(c) {
      c.upstream.first_byte_timeout_ms = 60_000;
      c.providers.push({ id: 'slow', format: 'chat', base_url: `http://127.0.0.1:${port}`, api_key: 'upstream-key' });
      c.models.push({ id: 'test/slow', context_window: 100000, max_output_tokens: 4000 });
      c.offers.push({ listing: 'test/slow@slow', model: 'test/slow', provider: 'slow', upstream_model: 'slow-up', price: { input: 1, output: 2 } });
      configFile = join(dirname(c.storage.sqlite), 'cli.json');
      writeFileSync(configFile, JSON.stringify(c));
    },
  });
});
t.teardown(async () => {
  await gw.close();
  await new Promise((resolve) => upstream.close(resolve));
});

const EMAIL = 'owner@example.com';
const creditsShow = async (...flags: string[]) =>
  (await promisify(execFile)(process.execPath, [gatewayBin, 'credits', 'show', '--account', EMAIL, '--config', configFile, ...flags],
    { env: childEnv(), encoding: 'utf8' })).stdout;

t.test('credits show beside a serving gateway: balance, held by a request in flight, available', async (t) => {
  const lock = lockDatabase(gw.dbPath); // as `gateway serve` holds it
  t.teardown(() => lock.release());
  const dashboard = await DashboardClient.signUp(gw.url, EMAIL);
  const accountId = (await gw.store.accounts.byEmail(EMAIL))!.id;
  const balance = 100_000_000_000;
  await gw.store.ledger.grant(accountId, balance, 'test credit');
  const { secret } = await gw.store.keys.create({ accountId, name: 'slow' });

  const reached = new Promise<void>((resolve) => (arrived = resolve));
  const answer = fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'test/slow', max_tokens: 3000, messages: [{ role: 'user', content: 'take your time' }] }),
  });
  await reached;
  await gw.store.flush(); // the hold's row is written with the gateway's next batch
  const held = (await gw.store.ledger.balance(accountId)).held;
  t.ok(held >= 3000 * 2000, `the request holds at least its output budget (${held})`);

  const text = await creditsShow();
  t.match(text, `${EMAIL}: balance $100.00, held ${formatUsd(held)} by requests in progress, available ${formatUsd(balance - held)}`);
  t.match(JSON.parse(await creditsShow('--json')), {
    balanceNano: balance, balance: '$100.00', heldNano: held, held: formatUsd(held),
    availableNano: balance - held, available: formatUsd(balance - held),
  });
  const page = (await dashboard.get('/dashboard/credits')).text;
  t.match(page, `data-testid="held"><span title="${formatUsd(held)}">`, 'the dashboard shows what is held');
  t.match(page, `data-testid="available"><span title="${formatUsd(balance - held)}">`, 'and what is available');

  waiting.shift()!();
  t.equal((await answer).status, 200);
  await gw.store.flush();
  const charge = 10 * 1000 + 7 * 2000; // 10 input at $1/M, 7 output at $2/M, in nano-USD
  t.match(JSON.parse(await creditsShow('--json')), { balanceNano: balance - charge, heldNano: 0, availableNano: balance - charge },
    'ended: nothing held, the actual usage charged');
});
