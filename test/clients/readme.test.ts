// The README's "Using it from your tools": every JavaScript snippet runs as written against a gateway
// with the default config (only the address is the test gateway's, through a recording proxy), and
// must get an answer with the model and the output budget it shows, on the route its client speaks.
// Claude Code's settings are run by claude-code.test.ts.
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { TestGateway } from '../helpers/gateway.js';
import { startDefaultConfigGateway, takingTurns } from './harness.js';
import { README_ADDRESS, budgetOf, modelOf, readmeSnippets, snippetImporting } from './readme-snippets.js';
import { startRecordingProxy, type ClientRequest, type RecordingProxy } from './recording-proxy.js';

const run = promisify(execFile);

/** Each client the README shows, and the gateway route it must reach. */
const CLIENTS = [
  { pkg: 'openai', route: '/v1/chat/completions', budgetField: 'max_completion_tokens' },
  { pkg: '@anthropic-ai/sdk', route: '/v1/messages', budgetField: 'max_tokens' },
  { pkg: '@ai-sdk/openai-compatible', route: '/v1/chat/completions', budgetField: 'max_tokens' },
  { pkg: '@ai-sdk/anthropic', route: '/v1/messages', budgetField: 'max_tokens' },
  { pkg: '@langchain/openai', route: '/v1/chat/completions', budgetField: 'max_tokens' },
  { pkg: '@langchain/anthropic', route: '/v1/messages', budgetField: 'max_tokens' },
] as const;

let gw: TestGateway;
let proxy: RecordingProxy;
// Inside node_modules, so the snippets' imports resolve to the packages installed here.
const cache = fileURLToPath(new URL('../../node_modules/.cache/', import.meta.url));
let dir: string;
t.before(async () => {
  gw = await startDefaultConfigGateway();
  proxy = await startRecordingProxy(gw.url);
  mkdirSync(cache, { recursive: true });
  dir = mkdtempSync(join(cache, 'readme-snippets-'));
});
t.teardown(async () => {
  rmSync(dir, { recursive: true, force: true });
  await proxy.close();
  await gw.close();
});

t.test('every JavaScript snippet of the section belongs to a client checked here', async (t) => {
  const js = readmeSnippets().filter((s) => s.lang === 'js');
  t.equal(js.length, CLIENTS.length);
  for (const s of js) t.ok(CLIENTS.some((c) => s.code.includes(`from '${c.pkg}'`)), s.code.split('\n')[0]);
});

/** What a snippet printed and the requests it made (told apart by its own key: two snippets run at a time). */
interface Outcome {
  /** null when the snippet ran to its end; else why it failed, with what it wrote to stderr. */
  failure: string | null;
  stdout: string;
  sent: ClientRequest[];
}

/** Runs the snippet of `pkg` as the README shows it, with a key of its own. */
async function runSnippet(code: string, pkg: string): Promise<Outcome> {
  const { secret } = await gw.store.keys.create({ accountId: gw.accountId, name: pkg });
  const file = join(dir, `${pkg.replace(/\W/g, '_')}.mjs`);
  writeFileSync(file, code.replaceAll(README_ADDRESS, proxy.url));
  const { stdout, failure } = await run(process.execPath, [file], { env: { PATH: process.env.PATH, HOME: dir, GATEWAY_API_KEY: secret }, timeout: 30_000 }).then(
    (r) => ({ stdout: r.stdout, failure: null }),
    (err: any) => ({ stdout: String(err.stdout ?? ''), failure: `${err.message}\n${String(err.stderr ?? '').slice(-1500)}` }),
  );
  const sent = proxy.requests.filter((r) => r.headers['x-api-key'] === secret || r.headers.authorization === `Bearer ${secret}`);
  return { failure, stdout, sent };
}

const outcomes = new Map<string, Promise<Outcome>>();
t.before(() => {
  const inTurn = takingTurns(2);
  for (const c of CLIENTS) {
    const p = inTurn(() => runSnippet(snippetImporting(c.pkg), c.pkg));
    p.catch(() => {}); // awaited (and reported) by the client's test
    outcomes.set(c.pkg, p);
  }
});

for (const client of CLIENTS) {
  t.test(`${client.pkg}: the README's snippet works as written`, async (t) => {
    const code = snippetImporting(client.pkg);
    t.ok(code.includes(README_ADDRESS), 'the snippet names the address the test replaces');
    const { failure, stdout, sent } = await outcomes.get(client.pkg)!;
    t.equal(failure, null, 'the snippet ran to its end');
    t.strictSame(sent.map((r) => [r.method, r.path.split('?')[0], r.status]), [['POST', client.route, 200]], `one request, to ${client.route}, answered 200`);
    t.equal(sent[0]?.body?.model, modelOf(code), 'with the model id the README shows');
    t.equal(sent[0]?.body?.[client.budgetField], budgetOf(code), `and its output budget (${client.budgetField})`);
    t.match(stdout.trim(), /^[a-z]+( [a-z]+)+$/, `it printed the answer: ${stdout.trim().slice(0, 60)}`);
  });
}
