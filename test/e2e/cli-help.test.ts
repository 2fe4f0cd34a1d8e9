// bin/gateway as a new operator meets it: help at every level, and mistakes (an unknown command or
// flag, a missing value, a bad number) refused with exit 2, the nearest name and the usage.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gateway, writeDemoConfig } from '../helpers/process.js';
import { tempDir } from '../lib/store/fixtures/store.js';
import { readCommandLine } from '../../lib/cli.js';

t.test('help: --help, -h and help print the general usage, exit 0; no command: usage on stderr, exit 2', async (t) => {
  for (const flag of ['--help', '-h', 'help']) {
    const r = gateway(flag);
    t.equal(r.code, 0, flag);
    t.match(r.out, /^usage: gateway COMMAND/, flag);
    t.match(r.out, /gateway keys create/);
    t.match(r.out, /gateway accounts set-password/);
  }
  const bare = gateway();
  t.equal(bare.code, 2);
  t.equal(bare.out, '');
  t.match(bare.err, /^usage: gateway COMMAND/);
});

t.test('every command and group has its own help, exit 0, without a config file', async (t) => {
  const commands = ['serve', 'config check', 'accounts create', 'accounts set-password', 'accounts reset-link', 'keys create', 'keys list', 'keys revoke',
    'credits grant', 'credits show', 'routing set', 'requests show', 'requests list', 'db migrate', 'db copy', 'simulate'];
  for (const c of commands) {
    const r = gateway(...c.split(' '), '--help', '--config', '/nonexistent.yaml');
    t.equal(r.code, 0, `${c} --help: ${r.err}`);
    t.match(r.out, new RegExp(`^usage: gateway ${c}\\b`), c);
  }
  const create = gateway('keys', 'create', '-h');
  t.match(create.out, /--monthly-limit USD +most it may spend/);
  t.match(create.out, /--account E +the account's email \(required\)/);
  const group = gateway('keys', '--help');
  t.equal(group.code, 0);
  t.match(group.out, /^usage: gateway keys SUBCOMMAND/);
  t.match(group.out, /gateway keys create[\s\S]*gateway keys list[\s\S]*gateway keys revoke/);
  t.same(gateway('help', 'keys', 'create').out, create.out, 'gateway help keys create');
});

t.test('a group without its subcommand lists them (stderr, exit 2); unknown commands get the nearest', async (t) => {
  const keys = gateway('keys');
  t.equal(keys.code, 2);
  t.equal(keys.out, '');
  t.match(keys.err, /gateway keys needs a subcommand\nsubcommands:\n {2}gateway keys create[\s\S]*gateway keys revoke/);
  t.match(gateway('kyes', 'list'), { code: 2, err: /^error: unknown command: kyes \(did you mean keys\?\)/ });
  t.match(gateway('keys', 'lst'), { code: 2, err: /^error: unknown command: keys lst \(did you mean keys list\?\)/ });
  t.match(gateway('frobnicate'), { code: 2, err: /^error: unknown command: frobnicate\n/ });
});

t.test('unknown flags are refused with the nearest one; missing values and bad numbers are named', async (t) => {
  const r = gateway('keys', 'list', '--acount', 'a@example.com');
  t.equal(r.code, 2);
  t.match(r.err, /^error: unknown flag --acount \(did you mean --account\?\)\nusage: gateway keys list --account E\n/);
  t.match(gateway('--json', 'keys', 'list', '--acount', 'x'), { code: 2, out: '{"ok":false,"error":"unknown flag --acount (did you mean --account?)"}\n' });
  t.match(gateway('keys', 'list'), { code: 2, err: /^error: --account is required\n/ });
  t.match(gateway('keys', 'create', '--account', 'a@example.com', '--name'), { code: 2, err: /^error: --name needs a value \(N\)/ });
  t.match(gateway('keys', 'create', '--account', 'a@example.com', '--name', 'n', '--rpm', 'ten'), { code: 2, err: /^error: --rpm must be a positive integer, not "ten"/ });
  t.match(gateway('requests', 'list', '--account', 'a@example.com', '--limit', '-5'), { code: 2, err: /^error: --limit must be a positive integer, not "-5"/ });
  t.match(gateway('keys', 'revoke', 'seven'), { code: 2, err: /^error: KEY_ID must be a positive integer, not "seven"/ });
  t.match(gateway('keys', 'revoke', '1', '2'), { code: 2, err: /^error: unexpected argument "2"/ });
  t.match(gateway('simulate', '--port', 'eighty'), { code: 2, err: /^error: --port must be a port number \(0-65535\), not "eighty"/ });
  t.match(gateway('simulate', '--config', 'x.yaml'), { code: 2, err: /^error: unknown flag --config/ }, 'simulate reads no config');
});

t.test('serve --bogus refuses to start', async (t) => {
  const dir = tempDir(t);
  const file = writeDemoConfig(dir, 'demo@example.com', 5);
  const r = gateway('serve', '--config', file, '--bogus');
  t.equal(r.code, 2);
  t.match(r.err, /^error: unknown flag --bogus\n/);
  t.notMatch(r.err, /listening/);
});

t.test('one table: the README lists each command as its help does', async (t) => {
  const readme = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8');
  const general = readCommandLine(['--help']);
  if (general.kind !== 'help') throw new Error('expected help');
  for (const name of general.text.matchAll(/^ {2}gateway (\S+(?: [a-z-]+)?) {2,}/gm)) {
    const help = readCommandLine([...name[1].split(' '), '--help']);
    if (help.kind !== 'help') throw new Error('expected help');
    const synopsis = /^usage: (.*)$/m.exec(help.text)![1];
    t.ok(readme.includes(synopsis), `README has: ${synopsis}`);
  }
});
