// The serve command's signal handlers: a SIGHUP reload and a SIGTERM shutdown that fail are logged,
// never left as a rejected promise (which would end the process).
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readCommandLine, reloadConfig, shutdown } from '../../lib/cli.js';
import { nearest } from '../../lib/commands/flags.js';
import type { GatewayConfig } from '../../lib/config-types.js';
import type { Logger } from '../../lib/log.js';

const config = {
  providers: [{ id: 'p', format: 'messages', base_url: 'https://api.example.com' }],
  models: [{ id: 'm/a', context_window: 1000, max_output_tokens: 100 }],
  offers: [{ listing: 'm/a@p', model: 'm/a', provider: 'p', upstream_model: 'up', price: { input: 1, output: 2 } }],
};

function recorder() {
  const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
  const log: Logger = (level, msg, fields) => void lines.push({ level, msg, fields });
  return { lines, log };
}

t.test('reloadConfig: applies the file; a failing reload or a bad file is logged and the config kept', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-cli-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'gateway.json');
  writeFileSync(file, JSON.stringify(config));

  const applied: GatewayConfig[] = [];
  const ok = recorder();
  t.equal(await reloadConfig({ reload: async (next) => void applied.push(next) }, file, ok.log), true);
  t.equal(applied[0].source, file);
  t.match(ok.lines, [{ level: 'info', msg: 'config reloaded', fields: { config: file } }]);

  const failing = recorder();
  const gw = { reload: async () => { throw new Error('the simulator could not start'); } };
  t.equal(await reloadConfig(gw, file, failing.log), false, 'a rejected reload resolves');
  t.match(failing.lines, [{ level: 'error', msg: /keeping the previous config/, fields: { err: 'the simulator could not start' } }]);

  writeFileSync(file, '{"providers": [');
  const bad = recorder();
  let called = false;
  t.equal(await reloadConfig({ reload: async () => void (called = true) }, file, bad.log), false);
  t.equal(called, false, 'an invalid file is not applied');
  t.match(bad.lines, [{ level: 'error', msg: /keeping the previous config/, fields: { err: /not valid JSON/ } }]);
});

t.test('shutdown: exit code 0 when closed, 1 (and a log line) when closing failed', async (t) => {
  const server = { shutdown_grace_ms: 10 } as GatewayConfig['server'];
  const done = recorder();
  t.equal(await shutdown({ config: { server } as GatewayConfig, close: async () => {} }, 'SIGTERM', done.log), 0);
  t.match(done.lines, [{ msg: /shutting down/, fields: { signal: 'SIGTERM', grace_ms: 10 } }, { msg: 'stopped' }]);
  const failed = recorder();
  const err = new Error('database is locked');
  t.equal(await shutdown({ config: { server } as GatewayConfig, close: async () => { throw err; } }, 'SIGINT', failed.log), 1);
  t.match(failed.lines, [{ msg: /shutting down/ }, { level: 'error', msg: 'shutdown failed', fields: { err } }]);
  t.notOk(failed.lines.some((l) => l.msg === 'stopped'));
});

t.test('readCommandLine: global flags before or after the words; --json and --help take no value', async (t) => {
  t.match(readCommandLine(['--config', 'F', '--json', 'accounts', 'create', '--email', 'a@example.com']), {
    kind: 'run', command: { name: 'accounts create' }, args: { config: 'F', json: true, email: 'a@example.com' },
  });
  t.match(readCommandLine(['--help', 'keys']), { kind: 'help', text: /^usage: gateway keys SUBCOMMAND/ });
  t.match(readCommandLine(['keys', 'list', '--account', 'a@example.com', '--json']), { kind: 'run', args: { account: 'a@example.com', json: true } });
  t.match(readCommandLine(['keys', 'list', '--account=a@example.com']), { kind: 'run', args: { account: 'a@example.com' } });
  t.match(readCommandLine(['keys', 'list', '--account', 'a', '--account', 'b']), { kind: 'usage', message: '--account is given twice' });
  t.match(readCommandLine(['keys', 'list', '--account', 'a', '--json=yes']), { kind: 'usage', message: '--json takes no value' });
  t.match(readCommandLine(['keys', 'list', '-account', 'a']), { kind: 'usage', message: 'unknown flag -account (did you mean --account?)' });
});

t.test('nearest: a typo or a prefix, not anything at all', async (t) => {
  const flags = ['account', 'name', 'models', 'monthly-limit', 'rpm', 'tpm'];
  t.equal(nearest('acount', flags), 'account');
  t.equal(nearest('monthly', flags), 'monthly-limit');
  t.equal(nearest('rmp', flags), 'rpm');
  t.equal(nearest('zzzzzz', flags), undefined);
});
