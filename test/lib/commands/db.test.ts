// gateway db migrate, and the operator commands on either store, through the command line entry
// point with a config file.
import t from 'tap';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { main } from '../../../lib/cli.js';
import { migrationsDir } from '../../../lib/store/sqlite/open.js';
import { pgMigrationsDir } from '../../../lib/store/postgres/migrate.js';
import { testConfigObject } from '../../helpers/gateway.js';
import { freshPostgresUrl } from '../../helpers/postgres.js';
import { openSql } from '../../helpers/sql.js';
import { backends, tempDir } from '../store/fixtures/store.js';

/** Run the command line; its exit code and what it wrote. */
async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const [write, writeErr] = [process.stdout.write, process.stderr.write];
  process.stdout.write = ((s: string) => (out.push(s), true)) as typeof process.stdout.write;
  process.stderr.write = ((s: string) => (err.push(s), true)) as typeof process.stderr.write;
  try {
    return { code: await main(argv), out: out.join(''), err: err.join('') };
  } finally {
    process.stdout.write = write;
    process.stderr.write = writeErr;
  }
}

const sqlFiles = (dir: string) => readdirSync(dir).filter((f) => f.endsWith('.sql')).sort();

backends(t, 'db migrate applies the pending migrations once and does nothing else; the commands then work on that store', async (t, backend) => {
  const dir = tempDir(t);
  const location = backend === 'sqlite' ? join(dir, 'data', 'gateway.db') : await freshPostgresUrl();
  const file = join(dir, 'gateway.json');
  const config = testConfigObject(location);
  if (backend === 'postgres') config.storage = { postgres: location };
  writeFileSync(file, JSON.stringify(config));

  const first = await cli(['db', 'migrate', '--config', file, '--json']);
  t.equal(first.code, 0, first.err);
  t.same(JSON.parse(first.out).applied, sqlFiles(backend === 'sqlite' ? migrationsDir : pgMigrationsDir), 'every migration, in order');
  const again = await cli(['db', 'migrate', '--config', file]);
  t.equal(again.code, 0);
  t.match(again.out, /is up to date\./);
  t.notMatch(again.out, /\*\*\*|secret/, 'no password in the output');

  const db = await openSql(location);
  t.teardown(() => db.close());
  t.equal(await db.value('SELECT COUNT(*) FROM accounts'), 0, 'nothing but the schema');
  if (backend === 'postgres') t.equal(await db.value('SELECT COUNT(*) FROM nodes'), 0, 'no node registered');

  const codes = [
    (await cli(['accounts', 'create', '--email', 'ops@example.com', '--config', file])).code,
    (await cli(['credits', 'grant', '--account', 'ops@example.com', '--amount', '2.5', '--config', file])).code,
  ];
  const shown = await cli(['credits', 'show', '--account', 'ops@example.com', '--config', file, '--json']);
  t.same([...codes, shown.code], [0, 0, 0]);
  t.match(JSON.parse(shown.out), { balanceNano: 2_500_000_000 });
  if (backend === 'postgres') t.equal(await db.value('SELECT COUNT(*) FROM nodes'), 0, 'each command\'s store left no node behind');
});

t.test('a PostgreSQL database that cannot be reached: one error line, exit 1', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'gateway.json');
  const config = testConfigObject('unused');
  config.storage = { postgres: 'postgres://gw:s3cret@127.0.0.1:1/gateway' };
  writeFileSync(file, JSON.stringify(config));
  for (const argv of [['db', 'migrate'], ['accounts', 'create', '--email', 'x@example.com']]) {
    const r = await cli([...argv, '--config', file]);
    t.equal(r.code, 1, argv.join(' '));
    t.match(r.err, /^error: cannot reach the PostgreSQL database at postgres:\/\/gw:\*\*\*@127\.0\.0\.1:1\/gateway: /);
    t.notMatch(r.err, /s3cret/, 'the password is not shown');
  }
});
