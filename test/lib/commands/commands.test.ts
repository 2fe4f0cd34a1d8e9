// The operator commands against a real temporary SQLite file: each run opens and closes its own
// store, as the command line does, while a long-lived store plays the running server.
import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { operatorCommands } from '../../../lib/commands/index.js';
import type { CommandIo } from '../../../lib/commands/types.js';
import { main } from '../../../lib/cli.js';
import { REFUSALS_RECORDED_PER_MINUTE } from '../../../lib/store/refusal-counts.js';
import { openStore } from '../../../lib/store/index.js';
import type { Store } from '../../../lib/store/types.js';
import { checkInvariants } from '../../helpers/invariants.js';
import { testConfigObject } from '../../helpers/gateway.js';
import { storeConfig, tempDir } from '../store/fixtures/store.js';

interface Run {
  code: number;
  out: string;
  value: any;
  error?: string;
}

function setup(t: Test) {
  const dbPath = join(tempDir(t), 'gateway.db');
  const config = storeConfig(dbPath);
  async function run(line: string[], opts: { json?: boolean } = {}): Promise<Run> {
    const words = line.filter((w) => !w.startsWith('--')).slice(0, 2).join(' ');
    const cmd = operatorCommands.find((c) => c.name === words)!;
    t.ok(cmd, `command ${words}`);
    const args: Record<string, string | boolean> = {};
    const rest = line.slice(cmd.name.split(' ').length);
    for (let i = 0, pos = 0; i < rest.length; i++) {
      if (rest[i].startsWith('--')) args[rest[i].slice(2)] = rest[i + 1] !== undefined && !rest[i + 1].startsWith('--') ? rest[++i] : true;
      else args[`_${pos++}`] = rest[i];
    }
    let store: Store | undefined;
    const r: Run = { code: -1, out: '', value: undefined };
    const io: CommandIo = {
      config,
      json: opts.json ?? false,
      store: () => (store ??= openStore(config)),
      print(value, text) {
        r.value = value;
        r.out += text + '\n';
      },
      fail(message) {
        r.error = message;
        return 1;
      },
    };
    try {
      r.code = await cmd.run(args, io);
    } finally {
      await store?.close();
    }
    return r;
  }
  return { dbPath, config, run };
}

t.test('accounts create', async (t) => {
  const { run } = setup(t);
  const r = await run(['accounts', 'create', '--email', 'Ops@Example.com', '--password', 'hunter22']);
  t.equal(r.code, 0);
  t.match(r.out, /Created account 1 \(ops@example\.com\) with a dashboard password/);
  t.match(r.value, { id: 1, email: 'ops@example.com', hasPassword: true });
  t.match(await run(['accounts', 'create', '--email', 'ops@example.com']), { code: 1, error: /already exists/ });
  t.match(await run(['accounts', 'create']), { code: 1, error: '--email is required' });
  t.match(await run(['accounts', 'create', '--email']), { code: 1, error: '--email needs a value' });
});

t.test('keys create / list / revoke; a running server sees the revocation on its next request', async (t) => {
  const { run, config } = setup(t);
  await run(['accounts', 'create', '--email', 'a@example.com']);
  const server = openStore(config);
  t.teardown(() => server.close());

  const created = await run(['keys', 'create', '--account', 'a@example.com', '--name', 'ci', '--models', 'test/gpt,test/claude', '--monthly-limit', '12.5']);
  t.equal(created.code, 0);
  const secret = /\n {2}(sk-service-[A-Za-z0-9]{40})\n/.exec(created.out)?.[1];
  t.ok(secret, 'the key is printed');
  t.match(created.value.key, { id: 1, name: 'ci', allowedModels: ['test/gpt', 'test/claude'], monthlyLimitNano: 12_500_000_000 });

  const json = await run(['keys', 'create', '--account', 'a@example.com', '--name', 'second'], { json: true });
  t.match(json.value.secret, /^sk-service-/);

  const list = await run(['keys', 'list', '--account', 'a@example.com']);
  t.equal(list.code, 0);
  t.match(list.out, /ID\s+NAME\s+KEY/);
  t.match(list.out, /1\s+ci\s+sk-service-\w{8}…\s+test\/gpt,test\/claude\s+\$12\.50\s+\$0\.00\s+default\s+default\s+-\s+active/);
  t.notOk(list.out.includes(secret!), 'the full key is never listed');
  t.notOk(JSON.stringify(list.value).includes(secret!.slice(19)), 'nor in JSON');

  const v = await server.sync();
  t.match(await server.keys.findByPrefix(secret!.slice(0, 19)), [{ revokedAt: null }]);
  const revoked = await run(['keys', 'revoke', '1']);
  t.equal(revoked.code, 0);
  t.match(revoked.out, /Revoked key 1 "ci"/);
  t.not(await server.sync(), v, "the server's change counter moved");
  t.match(await server.keys.findByPrefix(secret!.slice(0, 19)), [{ revokedAt: Number }]);

  t.match(await run(['keys', 'revoke', '1']), { code: 1, error: /already revoked/ });
  t.match(await run(['keys', 'revoke', '99']), { code: 1, error: 'no key with id 99' });
  t.match(await run(['keys', 'revoke', 'abc']), { code: 1, error: /positive integer/ });
  t.match(await run(['keys', 'revoke']), { code: 1, error: 'KEY_ID is required' });
  t.match(await run(['keys', 'create', '--account', 'a@example.com', '--name', 'x', '--models', 'nope/model']),
    { code: 1, error: /unknown model id\(s\) nope\/model/ });
  t.match(await run(['keys', 'create', '--account', 'a@example.com', '--name', 'x', '--monthly-limit', '-3']),
    { code: 1, error: /not a USD amount/ });
  t.match(await run(['keys', 'create', '--account', 'b@example.com', '--name', 'x']), { code: 1, error: 'no account with email b@example.com' });
});

t.test('keys create --rpm --tpm: the key\'s own rate limits, shown in keys list (text and JSON)', async (t) => {
  const { run, config } = setup(t);
  config.rate_limits = { requests_per_minute: 600, tokens_per_minute: 2_000_000 };
  await run(['accounts', 'create', '--email', 'a@example.com']);
  const created = await run(['keys', 'create', '--account', 'a@example.com', '--name', 'batch', '--rpm', '30', '--tpm', '40000']);
  t.equal(created.code, 0);
  t.match(created.out, /Created key 1 "batch" for a@example\.com, 30 requests per minute, 40000 tokens per minute\./);
  t.match(created.value.key, { rpm: 30, tpm: 40_000 });
  await run(['keys', 'create', '--account', 'a@example.com', '--name', 'plain']);

  const list = await run(['keys', 'list', '--account', 'a@example.com']);
  t.match(list.out, /ID\s+NAME\s+KEY\s+MODELS\s+MONTHLY LIMIT\s+THIS MONTH\s+RPM\s+TPM\s+LAST USED/);
  t.match(list.out, /1\s+batch\s+.*\$0\.00\s+30\s+40000\s+-\s+active/);
  t.match(list.out, /2\s+plain\s+.*\$0\.00\s+600 \(default\)\s+2000000 \(default\)\s+-\s+active/);
  const json = await run(['keys', 'list', '--account', 'a@example.com'], { json: true });
  t.match(json.value, [{ id: 1, rpm: 30, tpm: 40_000 }, { id: 2, rpm: null, tpm: null }]);

  for (const bad of ['0', '-5', '1.5', 'many'])
    t.match(await run(['keys', 'create', '--account', 'a@example.com', '--name', 'x', '--rpm', bad]), { code: 1, error: /--rpm must be a positive integer/ }, `--rpm ${bad}`);
  t.match(await run(['keys', 'create', '--account', 'a@example.com', '--name', 'x', '--tpm', '0']), { code: 1, error: /--tpm must be a positive integer/ });
  t.match(await run(['keys', 'create', '--account', 'a@example.com', '--name', 'x', '--tpm']), { code: 1, error: '--tpm needs a value' });
});

t.test('credits grant / show: exact decimal amounts, seen by the running server', async (t) => {
  const { run, config, dbPath } = setup(t);
  await run(['accounts', 'create', '--email', 'a@example.com']);
  const server = openStore(config);
  t.teardown(() => server.close());

  const g = await run(['credits', 'grant', '--account', 'a@example.com', '--amount', '0.1', '--note', 'welcome']);
  t.equal(g.code, 0);
  t.match(g.out, /Granted \$0\.10 to a@example\.com; balance is now \$0\.10/);
  await run(['credits', 'grant', '--account', 'a@example.com', '--amount', '0.2']);
  await server.sync();
  t.equal((await server.ledger.balance(1)).balance, 300_000_000, '0.1 + 0.2 is exactly 0.3');

  const show = await run(['credits', 'show', '--account', 'a@example.com']);
  t.match(show.out, /a@example\.com: balance \$0\.30, held \$0\.00 by requests in progress, available \$0\.30/);
  t.match(show.out, /grant\s+\$0\.10\s+welcome/);
  const showJson = await run(['credits', 'show', '--account', 'a@example.com'], { json: true });
  t.match(showJson.value, {
    balanceNano: 300_000_000, balance: '$0.30', heldNano: 0, held: '$0.00', availableNano: 300_000_000, available: '$0.30',
    entries: [{ kind: 'grant' }, { kind: 'grant', note: 'welcome' }],
  });

  // A request in flight on the running server: its hold is held, not available.
  const key = (await server.keys.create({ accountId: 1, name: 'k' })).key;
  const hold = await server.ledger.reserve({ accountId: 1, keyId: key.id, amount: 12_345_678, monthlyLimitNano: null });
  if (!hold.ok) throw new Error('refused');
  await server.flush();
  t.match((await run(['credits', 'show', '--account', 'a@example.com'])).out,
    /a@example\.com: balance \$0\.30, held \$0\.012345678 by requests in progress, available \$0\.287654322/);
  t.match((await run(['credits', 'show', '--account', 'a@example.com'], { json: true })).value, {
    balanceNano: 300_000_000, heldNano: 12_345_678, held: '$0.012345678', availableNano: 287_654_322, available: '$0.287654322',
  });
  await server.ledger.settle(hold.hold.id, 345_678);
  await server.flush();
  t.match((await run(['credits', 'show', '--account', 'a@example.com'], { json: true })).value,
    { balanceNano: 299_654_322, heldNano: 0, availableNano: 299_654_322 }, 'settled: the charge is the actual amount, nothing held');

  t.match(await run(['credits', 'grant', '--account', 'a@example.com', '--amount', '0']), { code: 1, error: /above zero/ });
  t.match(await run(['credits', 'grant', '--account', 'a@example.com', '--amount', '1.0000000001']), { code: 1, error: /at most 9 decimals/ });
  t.match(await run(['credits', 'grant', '--account', 'a@example.com']), { code: 1, error: '--amount is required' });
  await server.close();
  t.same(await checkInvariants(dbPath, { noOpenHolds: true }), []);
});

t.test('routing set: lists and price caps, partial updates, clearing', async (t) => {
  const { run } = setup(t);
  await run(['accounts', 'create', '--email', 'a@example.com']);
  const r = await run(['routing', 'set', '--account', 'a@example.com', '--allow', 'test/gpt', '--price-cap-input', '3', '--price-cap-output', '0.075']);
  t.equal(r.code, 0);
  t.same(r.value, { allow: ['test/gpt'], deny: [], priceCapInput: 3000, priceCapOutput: 75 });
  t.match(r.out, /allowed models: test\/gpt[\s\S]*price cap, input:  \$3 per million tokens[\s\S]*\$0\.075 per million/);
  const r2 = await run(['routing', 'set', '--account', 'a@example.com', '--deny', 'test/claude', '--allow', 'none']);
  t.same(r2.value, { allow: null, deny: ['test/claude'], priceCapInput: 3000, priceCapOutput: 75 });
  const r3 = await run(['routing', 'set', '--account', 'a@example.com', '--price-cap-input', 'none', '--deny', '']);
  t.same(r3.value, { allow: null, deny: [], priceCapInput: null, priceCapOutput: 75 });
  t.match(await run(['routing', 'set', '--account', 'a@example.com', '--price-cap-output', '0.0001']), { code: 1, error: /more than 3 decimals/ });
  t.match(await run(['routing', 'set', '--account', 'a@example.com', '--deny', 'x/y']), { code: 1, error: /unknown model/ });
});

t.test('requests show / list', async (t) => {
  const { run, config } = setup(t);
  await run(['accounts', 'create', '--email', 'a@example.com']);
  const store = openStore(config);
  const { key } = await store.keys.create({ accountId: 1, name: 'k' });
  for (let i = 0; i < 3; i++) {
    store.history.record({
      requestId: `req_${i}`, time: Date.UTC(2025, 0, 1, 0, 0, i), accountId: 1, keyId: key.id, route: 'chat', model: 'test/gpt',
      listing: 'test/gpt@sim-chat', attempts: [{ listing: 'test/gpt@sim-chat', outcome: 'ok', status: 200, durationMs: 31.6 }],
      status: 'ok', httpStatus: 200, stream: i === 1, usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 },
      holdNano: 1_000_000, costNano: 75_000, latencyMs: 40.2, ttfbMs: 12.7, error: null,
      requestedModel: i === 2 ? 'gpt-latest' : null,
    });
  }
  await store.close();

  const show = await run(['requests', 'show', 'req_1']);
  t.equal(show.code, 0);
  t.match(show.out, /request req_1[\s\S]*route:\s+chat \(stream\)[\s\S]*listing:\s+test\/gpt@sim-chat[\s\S]*cost:\s+\$0\.000075[\s\S]*latency:\s+40 ms \(first byte 13 ms\)[\s\S]*1\. test\/gpt@sim-chat: ok \(HTTP 200\), 32 ms/);
  t.match(show.out, /model:\s+test\/gpt\n/, 'asked by its own id: no alias shown');
  t.match((await run(['requests', 'show', 'req_2'])).out, /model:\s+test\/gpt \(asked as gpt-latest\)\n/, 'the alias the client sent, read back from the file');
  t.match(await run(['requests', 'show', 'req_nope']), { code: 1, error: 'no request req_nope in the history' });

  const list = await run(['requests', 'list', '--account', 'a@example.com', '--limit', '2']);
  t.equal(list.value.length, 2);
  t.same(list.value.map((r: any) => r.requestId), ['req_2', 'req_1'], 'newest first');
  t.match(list.out, /TIME\s+REQUEST[\s\S]*req_2[\s\S]*req_1/);
  t.match(await run(['requests', 'list', '--account', 'a@example.com', '--limit', '0']), { code: 1, error: /positive integer/ });
});

t.test('requests list shows the refusals a key\'s summary row counts', async (t) => {
  const { run, config } = setup(t);
  await run(['accounts', 'create', '--email', 'a@example.com']);
  const store = openStore(config);
  const { key } = await store.keys.create({ accountId: 1, name: 'k' });
  const time = Date.now(); // one arrival time: a clock read per row could split them over two minutes
  for (let i = 0; i < REFUSALS_RECORDED_PER_MINUTE + 7; i++) {
    store.history.recordRefusal({
      requestId: `req_${i}`, time, accountId: 1, keyId: key.id, route: 'chat', model: null, listing: null, attempts: [],
      status: 'error', httpStatus: 400, stream: false, usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 },
      holdNano: 0, costNano: 0, latencyMs: 0.2, ttfbMs: null, error: 'Invalid JSON body',
    });
  }
  await store.close();
  const list = await run(['requests', 'list', '--account', 'a@example.com', '--limit', '100']);
  t.equal(list.value.length, REFUSALS_RECORDED_PER_MINUTE + 1);
  t.match(list.out, /error: 7 more refused requests of this key in this minute not recorded/);
});

t.test('through the command line entry point, with a config file', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'gateway.json');
  writeFileSync(file, JSON.stringify(testConfigObject(join(dir, 'gateway.db'))));
  const chunks: string[] = [];
  const write = process.stdout.write;
  process.stdout.write = ((s: string) => (chunks.push(s), true)) as typeof process.stdout.write;
  let codes: number[];
  try {
    codes = [
      await main(['accounts', 'create', '--email', 'cli@example.com', '--config', file]),
      await main(['credits', 'grant', '--account', 'cli@example.com', '--amount', '2.5', '--config', file]),
      await main(['credits', 'show', '--account', 'cli@example.com', '--config', file, '--json']),
    ];
  } finally {
    process.stdout.write = write;
  }
  t.same(codes, [0, 0, 0]);
  t.match(JSON.parse(chunks.at(-1)!), { balanceNano: 2_500_000_000 });
});
