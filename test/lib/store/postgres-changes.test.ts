// A serving node's listener for changes (LISTEN gateway_changes): a change made on another node or
// from the command line moves its change version without a poll; its connection killed, the node
// polls meanwhile, connects again and misses nothing; announcements of another schema of the same
// database are not its own.
import t from 'tap';
import { freshPostgresUrl, openPgNode, postgresSkip } from '../../helpers/postgres.js';
import { until } from '../../helpers/until.js';
import { openSql } from '../../helpers/sql.js';
import { seedAccount } from './fixtures/store.js';

const skip = await postgresSkip();

const node = openPgNode;

/**
 * A listening node that never polls and never makes its safety read (a minute between them): only
 * announcements and the read on connecting move its version.
 */
const listeningOnly = { listen: true, changePollMs: 60_000, listenerTimings: { pollMs: 60_000 } };

async function terminate(url: string, pid: number): Promise<void> {
  const db = await openSql(url);
  try {
    await db.value('SELECT pg_terminate_backend(?)', pid);
  } finally {
    await db.close();
  }
}

t.test('a revocation, a routing change and an account change made elsewhere move a listening node\'s version as they commit', { skip }, async (t) => {
  const url = await freshPostgresUrl();
  const commandLine = await node(t, url); // no listener: a short-lived command
  const b = await node(t, url, listeningOnly);
  await until('listening', () => b.listener!.listening, 5000);
  const acct = await seedAccount(commandLine, 0);
  const changes: [string, () => Promise<unknown>][] = [
    ['a key revoked', () => commandLine.keys.revoke(acct.keyId)],
    ['routing changed', () => commandLine.routing.set(acct.accountId, { deny: ['test/gpt'] })],
    ['an account added', () => commandLine.accounts.create({ email: 'second@example.com' })],
  ];
  for (const [what, change] of changes) {
    const before = b.changeVersion();
    await change();
    const ms = await until(`${what} heard`, () => b.changeVersion() !== before, 1000);
    t.pass(`${what}: heard in ${ms.toFixed(1)} ms, without a poll`);
    t.not(await b.sync(), before, 'sync() answers with the moved version');
  }
  const db = await openSql(url);
  t.teardown(() => db.close());
  const counter = () => db.value('SELECT n FROM change_counter') as Promise<number>;
  /** Waits until b has heard every change committed so far; the counter's value. */
  const heard = async (what: string) => {
    const n = Number(await counter());
    await until(what, () => b.changes.seen === n, 1000);
    return n;
  };
  const n0 = await heard('every change so far heard');
  const before = b.changeVersion();
  commandLine.keys.touch(acct.keyId);
  await commandLine.flush();
  await commandLine.ledger.grant(acct.accountId, 1_000_000_000);
  await db.exec(`NOTIFY gateway_changes, 'not a number'`);
  await db.exec(`NOTIFY gateway_changes, '999999 other_schema'`);
  // Announcements arrive in commit order: once this one is heard, any from the above would have been.
  await commandLine.routing.set(acct.accountId, { deny: [] });
  const n1 = await heard('the last change heard');
  t.equal(b.changeVersion(), before + (n1 - n0), 'moved for the last change\'s announcements only: ' +
    'a key\'s last use, a grant and malformed or foreign announcements do not empty caches');
});

t.test('announcements of another schema in the same database are not this store\'s', { skip }, async (t) => {
  const url = await freshPostgresUrl();
  const elsewhere = await node(t, await freshPostgresUrl());
  const b = await node(t, url, listeningOnly);
  await until('listening', () => b.listener!.listening, 5000);
  const mine = await seedAccount(b, 0);
  const theirs = await seedAccount(elsewhere, 0);
  // The other schema's counter far ahead of this one's: its announcements would count here if heard as this store's.
  const other = await openSql(elsewhere.location);
  await other.exec('UPDATE change_counter SET n = n + 1000');
  await other.close();
  const before = b.changeVersion();
  await elsewhere.keys.revoke(theirs.keyId);
  // Its own change, made afterwards by another store, is announced after the other schema's.
  const commandLine = await node(t, url);
  await commandLine.keys.revoke(mine.keyId);
  const db = await openSql(url);
  const n = Number(await db.value('SELECT n FROM change_counter'));
  await db.close();
  await until('its own change heard', () => b.changes.seen === n, 1000);
  t.equal(b.changeVersion(), before + 1, 'moved once: for its own schema\'s change only');
});

t.test('the listening connection killed: the node polls meanwhile, connects again, and misses nothing', { skip }, async (t) => {
  const url = await freshPostgresUrl();
  const commandLine = await node(t, url);
  // Reconnecting after two seconds at the earliest: the change below is made, and polled, while it is down.
  const b = await node(t, url, { listen: true, changePollMs: 100, listenerTimings: { reconnectMinMs: 2000 } });
  await until('listening', () => b.listener!.listening, 5000);
  const acct = await seedAccount(commandLine, 0);
  const second = await commandLine.keys.create({ accountId: acct.accountId, name: 'second' });
  const firstPid = b.listener!.pid!;

  await terminate(url, firstPid);
  await until('the broken connection noticed', () => !b.listener!.listening, 5000);
  let before = await b.sync();
  await commandLine.keys.revoke(acct.keyId);
  // As requests would: each calls sync(), which polls while nobody listens.
  const polling = performance.now();
  while (b.changeVersion() === before && performance.now() - polling < 1000) {
    await b.sync();
    await new Promise((r) => setImmediate(r));
  }
  t.not(b.changeVersion(), before, `a change made while the listener was down is seen by polling (${(performance.now() - polling).toFixed(0)} ms)`);
  t.notOk(b.listener!.listening, 'seen before the listener was back');

  const ms = await until('listening again', () => b.listener!.listening, 5000);
  t.not(b.listener!.pid, firstPid, `a new listening connection (${ms.toFixed(0)} ms after)`);
  before = b.changeVersion();
  await commandLine.keys.revoke(second.key.id);
  await until('the next change heard', () => b.changeVersion() !== before, 1000);
  t.pass('changes are announced again');
});

t.test('a change made while the listener was down counts when it connects again, with no poll', { skip }, async (t) => {
  const url = await freshPostgresUrl();
  const commandLine = await node(t, url);
  const b = await node(t, url, { ...listeningOnly, listenerTimings: { pollMs: 60_000, reconnectMinMs: 500 } });
  await until('listening', () => b.listener!.listening, 5000);
  const acct = await seedAccount(commandLine, 0);
  const firstPid = b.listener!.pid!;
  await terminate(url, firstPid);
  await until('the broken connection noticed', () => !b.listener!.listening, 5000);
  const before = b.changeVersion();
  await commandLine.keys.revoke(acct.keyId);
  await until('listening again', () => b.listener!.listening, 5000);
  t.not(b.changeVersion(), before, 'the counter read on connecting showed the change');
});

t.test('while listening, the counter is still read now and then: a move nobody announced counts too', { skip }, async (t) => {
  const url = await freshPostgresUrl();
  const b = await node(t, url, { listen: true, changePollMs: 60_000, listenerTimings: { pollMs: 200 } });
  await until('listening', () => b.listener!.listening, 5000);
  const db = await openSql(url);
  t.teardown(() => db.close());
  const before = b.changeVersion();
  await db.exec('UPDATE change_counter SET n = n + 1'); // the counter moved without a trigger: no announcement
  const ms = await until('the move read', () => b.changeVersion() !== before, 1000);
  t.ok(b.listener!.listening, `read on the listening connection after ${ms.toFixed(0)} ms, still listening`);
});

t.test('a node that is not asked to listen keeps no listening connection', { skip }, async (t) => {
  const url = await freshPostgresUrl();
  const cli = await node(t, url);
  t.equal(cli.listener, undefined);
  const db = await openSql(url);
  t.teardown(() => db.close());
  t.equal(await db.value(`SELECT COUNT(*)::int FROM pg_stat_activity WHERE application_name LIKE 'llm-gateway changes %' AND application_name LIKE ?`, `%${cli.nodeId}`), 0);
});
