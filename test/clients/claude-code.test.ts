// Client matrix: the Claude Code CLI (`claude -p`, the npm release pinned in devDependencies) with the
// README's settings against a gateway with the default config. A recording proxy in front of the
// gateway shows what Claude Code asks for (its model ids, output budgets, prompt sizes), which the
// README states and the config's aliases must cover. Each run has a key of its own and a tag in its
// prompt, so runs go two at a time and their requests (to the gateway, to the upstream) are told apart.
import t from 'tap';
import type { Test } from 'tap';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestGateway } from '../helpers/gateway.js';
import { TWO_TOOL_CALLS, startDefaultConfigGateway, takingTurns, upstreamRoute } from './harness.js';
import { README_ADDRESS, README_KEY, claudeCodeSettings } from './readme-snippets.js';
import { startRecordingProxy, type ClientRequest, type RecordingProxy } from './recording-proxy.js';

const CLAUDE = fileURLToPath(new URL('../../node_modules/.bin/claude', import.meta.url));

let gw: TestGateway;
let proxy: RecordingProxy;
let home: string;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Claude Code's requests to /v1/messages. */
  asked: ClientRequest[];
  /** The upstream routes that served them. */
  upstream: string[];
}

let runCount = 0;

/**
 * `claude -p PROMPT` with the README's settings (address and key replaced by the test's), less
 * `without`, plus `env`. Only the test's own switches are added: no update checks, no telemetry,
 * no traffic but the gateway's, a HOME of its own.
 */
async function claude(o: { args?: string[]; env?: Record<string, string>; without?: string[]; prompt?: string } = {}): Promise<Run> {
  const tag = `(run ${++runCount})`;
  const { secret } = await gw.store.keys.create({ accountId: gw.accountId, name: `claude ${tag}` });
  const settings = claudeCodeSettings();
  for (const name of o.without ?? []) delete settings[name];
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: mkdtempSync(join(home, 'home-')),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    ...Object.fromEntries(Object.entries(settings).map(([k, v]) => [k, v.replaceAll(README_ADDRESS, proxy.url).replaceAll(README_KEY, secret)])),
    ...o.env,
  };
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    // In a folder of its own: the tool round trip lets it run its tools (here they refuse: see below).
    const cwd = mkdtempSync(join(home, 'cwd-'));
    const child = execFile(CLAUDE, [...(o.args ?? []), '-p', `${o.prompt ?? 'Say hello'} ${tag}`], { cwd, env, timeout: RUN_TIMEOUT_MS }, (err, stdout, stderr) =>
      resolve({
        code: err ? (typeof (err as any).code === 'number' ? (err as any).code : null) : 0,
        stdout,
        stderr: err?.killed ? `killed (${err.signal}) after ${RUN_TIMEOUT_MS} ms. ${stderr}` : stderr,
      }),
    );
    child.stdin?.end();
  });
  const asked = proxy.requests.filter((r) => (r.headers.authorization === `Bearer ${secret}` || r.headers['x-api-key'] === secret) && r.path.startsWith('/v1/messages'));
  return { code, stdout, stderr, asked, upstream: gw.sim.received.filter((r) => JSON.stringify(r.body).includes(tag)).map(upstreamRoute) };
}

/** What the report and the aliases need: model, output budget, prompt size, answer status. */
const summary = (r: ClientRequest) => ({
  model: r.body?.model,
  max_tokens: r.body?.max_tokens,
  thinking: r.body?.thinking,
  prompt_kb: Math.round(r.bytes / 1024),
  beta: String(r.headers['anthropic-beta'] ?? '').split(',').filter((b) => b.startsWith('context-1m')),
  status: r.status,
});

/** Gateway model ids of the default config on each path: demo/claude-like has a messages offer, demo/gpt-like a chat one. */
const PATHS = [
  ['same-format', 'demo/claude-like'],
  ['converted', 'demo/gpt-like'],
] as const;
const UPSTREAM = { 'same-format': '/v1/messages', converted: '/v1/chat/completions' } as const;

const runs = new Map<string, Promise<Run>>();
/** Two runs at a time: a run takes about a second of CPU, and the machine may have two cores. */
const RUNS_AT_ONCE = 2;
/** A run takes about a second; the margin is for a loaded machine. */
const RUN_TIMEOUT_MS = 60_000;
const inTurn = takingTurns(RUNS_AT_ONCE);
const start = (name: string, run: () => Promise<Run>) => {
  const p = inTurn(run);
  p.catch(() => {}); // awaited (and reported) by its test
  runs.set(name, p);
};

t.before(async () => {
  gw = await startDefaultConfigGateway();
  proxy = await startRecordingProxy(gw.url);
  home = mkdtempSync(join(tmpdir(), 'claude-code-'));
  const noBudget = ['CLAUDE_CODE_MAX_OUTPUT_TOKENS'];
  start('readme', () => claude());
  start('sonnet', () => claude({ args: ['--model', 'sonnet'], without: noBudget }));
  start('haiku', () => claude({ args: ['--model', 'haiku'], without: noBudget }));
  start('default budget', () => claude({ without: noBudget }));
  start('gateway id, default budget', () => claude({ env: { ANTHROPIC_MODEL: 'demo/claude-like' }, without: noBudget }));
  for (const [path, model] of PATHS) {
    start(`text, ${path}`, () => claude({ env: { ANTHROPIC_MODEL: model } }));
    // At most 4 turns: a loop that does not end fails the test instead of running on.
    start(`tools, ${path}`, () => claude({ env: { ANTHROPIC_MODEL: model }, args: ['--max-turns', '4'], prompt: `Look around ${TWO_TOOL_CALLS}` }));
  }
});
t.teardown(async () => {
  await proxy.close();
  await gw.close();
  rmSync(home, { recursive: true, force: true });
});

/** The run answered: exit 0, the simulated model's words printed, every request of it answered 200. */
function answered(t: Test, run: Run): void {
  t.comment(JSON.stringify(run.asked.map(summary)));
  t.equal(run.code, 0, `claude exited 0${run.code === 0 ? '' : `: ${(run.stdout + run.stderr).trim().slice(0, 300)}`}`);
  t.ok(run.asked.length > 0, 'it asked the gateway');
  t.strictSame(run.asked.map((r) => r.status), run.asked.map(() => 200), 'every request answered 200');
  t.match(run.stdout.trim(), /^[a-z]+( [a-z]+)+$/, `it printed the answer: ${run.stdout.trim().slice(0, 60)}`);
}

t.test("the README's settings, Claude Code's own model id: the alias serves it", async (t) => {
  const run = await runs.get('readme')!;
  answered(t, run);
  t.equal(run.asked[0]?.body?.model, 'claude-opus-4-8', "Claude Code's default id, as the README says");
  t.equal(run.asked[0]?.body?.max_tokens, Number(claudeCodeSettings().CLAUDE_CODE_MAX_OUTPUT_TOKENS), "the README's output budget");
  t.ok(run.asked[0]?.bytes > 50_000, `a prompt of about 19k tokens (${run.asked[0]?.bytes} bytes)`);
  t.strictSame(run.upstream, ['/v1/messages'], 'within the messages offer ceiling: served in the same format');
});

// Without CLAUDE_CODE_MAX_OUTPUT_TOKENS: the ids and budgets Claude Code picks, as the README states them.
for (const [name, model, budget, upstream] of [
  ['default budget', 'claude-opus-4-8', 64000, '/v1/chat/completions'],
  ['sonnet', 'claude-sonnet-5', 64000, '/v1/chat/completions'],
  ['haiku', 'claude-haiku-4-5-20251001', 32000, '/v1/messages'],
  ['gateway id, default budget', 'demo/claude-like', 32000, '/v1/messages'],
] as const) {
  t.test(`without an output budget${name === 'sonnet' || name === 'haiku' ? `, --model ${name}` : ''}: asks for ${model} with ${budget} tokens, and is served`, async (t) => {
    const run = await runs.get(name)!;
    t.equal(run.asked[0]?.body?.model, model, 'the id the README names');
    t.equal(run.asked[0]?.body?.max_tokens, budget, 'the budget the README names');
    answered(t, run);
    // demo/claude-like's messages-format offer has a ceiling of 32,000 output tokens.
    t.strictSame(run.upstream, [upstream], `served on ${upstream}`);
  });
}

for (const [path, model] of PATHS) {
  t.test(`a gateway model id (ANTHROPIC_MODEL=${model}), ${path}: text, streamed, with thinking and tools in the request`, async (t) => {
    const run = await runs.get(`text, ${path}`)!;
    answered(t, run);
    t.equal(run.asked[0]?.body?.model, model);
    t.equal(run.asked[0]?.body?.stream, true, 'Claude Code streams');
    t.ok(run.asked[0]?.body?.tools?.length > 0, 'with its tool definitions');
    t.strictSame(run.upstream, [UPSTREAM[path]], `served on ${UPSTREAM[path]}`);
  });

  t.test(`${model}, ${path}: a tool round trip with two parallel calls`, async (t) => {
    // The simulated model calls Claude Code's first two tools, Agent and Bash, with made-up
    // arguments: Agent refuses the unknown agent type and Bash, in -p mode, asks for an approval
    // nobody gives. Both answers go back as tool results, and the model then answers in text.
    const run = await runs.get(`tools, ${path}`)!;
    answered(t, run);
    t.equal(run.asked.length, 2, 'two requests: the tool calls, then the answer');
    const [first, second] = run.asked.map((r) => r.body);
    const assistant = second?.messages?.findLast((m: any) => m.role === 'assistant');
    const calls = (assistant?.content ?? []).filter((b: any) => b.type === 'tool_use');
    t.equal(calls.length, 2, 'two parallel calls');
    t.match(assistant?.content?.[0], { type: 'thinking', signature: /.+/ }, 'the signed thinking went back first');
    const results = second?.messages?.at(-1)?.content?.filter((b: any) => b.type === 'tool_result') ?? [];
    t.strictSame(results.map((r: any) => r.tool_use_id).sort(), calls.map((c: any) => c.id).sort(), 'a result for each call');
    t.ok(first, 'the first request arrived');
    t.strictSame(run.upstream, [UPSTREAM[path], UPSTREAM[path]], `both served on ${UPSTREAM[path]}`);
  });
}
