// PostgreSQL itself restarted under load (a private server, not the shared one): while it is down
// a `gateway serve` process answers 503 with Retry-After and nothing else fails; it does not crash;
// it serves again soon after the server is back; and the rows it queued meanwhile (the history of
// the requests it answered, the charges of those it served) are written, with the money invariants
// holding. Twice: a fast shutdown (sessions ended by the server) and an immediate one (a crash,
// recovery at start), each on a server of its own.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../lib/log.js';
import { openPostgresStore } from '../../lib/store/postgres/store.js';
import { checkInvariants } from '../helpers/invariants.js';
import { privatePostgresSkip, startPrivatePostgres } from '../helpers/private-postgres.js';
import { serveProcess, writeDemoConfig } from '../helpers/process.js';
import { openSql } from '../helpers/sql.js';
import { streamChat, type StreamOutcome } from '../helpers/stream-chat.js';
import { poll } from '../helpers/until.js';

const skip = privatePostgresSkip();
/** From the server accepting connections again to the first request served after. */
const SERVED_AGAIN_BOUND_MS = 10_000;

const dir = mkdtempSync(join(tmpdir(), 'gw-pgrestart-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** A stream of 10 words, one every 20 ms: about 200 ms in flight, so a stop finds some mid-stream. */
const BODY = { model: 'test/gpt', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'x <<sim words=10 delay_ms=20>>' }] };

const request = (url: string, key: string) => streamChat(url, key, BODY);

/**
 * A private server and a gateway process on it, 8 clients sending requests one after another; the
 * server stopped in `mode` once requests are being served, started again once requests are being
 * refused; then every request answered must be served or refused 503 with Retry-After, the process
 * still running, and every row it queued written.
 */
async function restartUnderLoad(t: Test, mode: 'fast' | 'immediate') {
  const pg = await startPrivatePostgres(t);
  const url = pg.url();
  const config = writeDemoConfig(dir, 'unused@example.com', 1, (c) => {
    c.demo = { enabled: false };
    c.storage = { postgres: url, commit_interval_ms: 2 };
  });
  const setup = openPostgresStore({ url, commitIntervalMs: 2, clock: Date.now, log: silentLogger });
  const account = await setup.accounts.create({ email: 'load@example.com' });
  await setup.ledger.grant(account.id, 1_000_000_000_000, 'test credit');
  const { secret: key } = await setup.keys.create({ accountId: account.id, name: 'k', monthlyLimitNano: null });
  await setup.flush();
  await setup.close();

  const node = await serveProcess(config);
  t.teardown(() => node.child.kill('SIGKILL'));
  let exit: string | undefined;
  node.child.on('exit', (code, signal) => (exit = `exited with ${code ?? signal}`));

  // 8 clients, each sending one request after another until the end.
  let running = true;
  const outcomes: StreamOutcome[] = [];
  const clients = Array.from({ length: 8 }, async () => {
    while (running && !exit) outcomes.push(await request(node.url, key));
  });
  const count = (from: number, pred: (o: StreamOutcome) => boolean) => outcomes.slice(from).filter(pred).length;
  const isOk = (o: StreamOutcome) => o.result === 'ok';
  const isRefusal = (o: StreamOutcome) => o.result.startsWith('503');

  try {
    await poll('requests served', 10_000, async () => count(0, isOk) >= 16);
    await pg.stop(mode);
    const stopped = outcomes.length;
    await poll('requests refused while PostgreSQL is down', 10_000, async () => count(stopped, isRefusal) >= 16);
    await pg.start();
    const startedAt = Date.now();
    const back = (await poll(`a request served again (bound ${SERVED_AGAIN_BOUND_MS} ms)`, SERVED_AGAIN_BOUND_MS, async () =>
      outcomes.slice(stopped).find((o) => isOk(o) && o.startedAt >= startedAt)))!;
    t.comment(`${mode} stop: ${count(stopped, isRefusal)} refused while down; served again ${back.startedAt - startedAt} ms after the server was back`);
  } finally {
    running = false;
    await Promise.all(clients);
  }

  t.equal(exit, undefined, 'the gateway process did not exit');
  const by: Record<string, number> = {};
  for (const o of outcomes) by[o.result] = (by[o.result] ?? 0) + 1;
  t.comment(`outcomes ${JSON.stringify(by)}`);
  const others = outcomes.filter((o) => !isOk(o) && !(isRefusal(o) && Number(o.retryAfter) > 0));
  t.same(others.map((o) => `${o.result} (Retry-After ${o.retryAfter})`), [], 'every request served or refused 503 with Retry-After: no other failure');

  // The queued rows reach the database: each served request's history row and charge, each refusal
  // after authentication in the history too (the first few of a key in a minute a row each, the rest
  // counted in a summary row); refusals before it (the key's check needs the database) have no row.
  // No hold is left open.
  const db = await openSql(url, { readonly: true });
  t.teardown(() => db.close());
  const served = outcomes.filter(isOk).map((o) => o.requestId!);
  const answered = new Set(outcomes.map((o) => o.requestId));
  const afterAuth = served.length + count(0, (o) => o.result === '503 billing_unavailable');
  const rows = async () => {
    const history = await db.all('SELECT request_id, status, cost, not_recorded FROM request_history');
    const charges = new Map((await db.all(`SELECT h.request_id, -j.amount AS charge FROM journal j JOIN holds h ON h.id = j.hold_id WHERE j.kind = 'charge'`))
      .map((r) => [r.request_id, r.charge]));
    const ok = new Map(history.filter((r) => r.status === 'ok').map((r) => [r.request_id, r.cost]));
    return {
      'served without an ok history row': served.filter((id) => !ok.has(id)).length,
      'served without its charge in the journal': served.filter((id) => !(charges.get(id) > 0) || charges.get(id) !== ok.get(id)).length,
      'history rows of no answered request': history.filter((r) => r.not_recorded === 0 && !answered.has(r.request_id)).length,
      'requests in the history (rows and counted refusals) within [served + 503 billing_unavailable, answered]':
        ((n) => n >= afterAuth && n <= answered.size)(history.reduce((n, r) => n + (r.not_recorded > 0 ? r.not_recorded : 1), 0)),
    };
  };
  const openHolds = async () => Number(await db.value(`SELECT COUNT(*) FROM holds WHERE status = 'open'`));
  const want = {
    'served without an ok history row': 0, 'served without its charge in the journal': 0, 'history rows of no answered request': 0,
    'requests in the history (rows and counted refusals) within [served + 503 billing_unavailable, answered]': true,
  };
  let got = await rows();
  let open = await openHolds();
  const done = async () => {
    [got, open] = [await rows(), await openHolds()];
    return JSON.stringify(got) === JSON.stringify(want) && open === 0;
  };
  await poll('the backlog written', 10_000, done).catch(() => {});
  t.same(got, want, `the backlog written: the ${served.length} served requests each in the history and charged, the ${answered.size} answered accounted for`);
  t.equal(open, 0, 'no hold left open (an open hold of a live node is never swept: its credit would stay held)');
  t.same(await checkInvariants(url, { noOpenHolds: true }), [], 'invariants hold');
  if (JSON.stringify(got) !== JSON.stringify(want) || open !== 0) {
    t.comment(`holds by status, with their request's history row: ${JSON.stringify(await db.all(`SELECT h.status, h.charged > 0 AS charged,
      r.status AS history, COUNT(*)::int AS n FROM holds h LEFT JOIN request_history r ON r.request_id = h.request_id GROUP BY 1, 2, 3`))}`);
    t.comment(`served requests in the history without a hold row: ${await db.value(`SELECT COUNT(*)::int FROM request_history r
      WHERE r.status = 'ok' AND NOT EXISTS (SELECT 1 FROM holds h WHERE h.request_id = r.request_id)`)}`);
  }
}

t.test('PostgreSQL stopped mid-load (pg_ctl stop -m fast) and started again: 503 with Retry-After while down, no crash, the backlog written after', { skip }, (t) =>
  restartUnderLoad(t, 'fast'));

// Fails today: the store's sessions commit asynchronously (synchronous_commit = off, db.ts), so the
// crash loses the last commits the node was told had succeeded. The README accepts losing the last
// moments of charges and history in a database crash (an under-charge); what it does not say is
// that the settled holds of those lost batches come back open in the database while the live node
// that owns them has forgotten them: no sweep ever ends them, and the account's credit stays held
// until that node stops. With synchronous_commit = on it passes. Left failing for the lead.
t.test('PostgreSQL crashed mid-load (pg_ctl stop -m immediate) and started again: 503 with Retry-After while down, no crash, the backlog written after', { skip }, (t) =>
  restartUnderLoad(t, 'immediate'));
