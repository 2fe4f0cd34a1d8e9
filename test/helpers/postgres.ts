// PostgreSQL for tests: the server at 127.0.0.1:5432 (user postgres, trust authentication; another
// with GATEWAY_TEST_POSTGRES). Each test file gets its own database, created on first use and
// dropped when the file's tests end; each store a fresh schema in it. Where PostgreSQL is required
// (GATEWAY_REQUIRE_POSTGRES=1, set by .ci/run) an unreachable server fails the tests instead of
// skipping them.
import t, { type Test } from 'tap';
import pg from 'pg';
import { silentLogger } from '../../lib/log.js';
import { openPostgresStore, type PostgresStore, type PostgresStoreOptions } from '../../lib/store/postgres/store.js';

export const PG_SERVER = process.env.GATEWAY_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432';
const required = process.env.GATEWAY_REQUIRE_POSTGRES === '1';

let reachable: Promise<boolean> | undefined;

/** Whether the server answers (once per process). */
export function postgresReachable(): Promise<boolean> {
  reachable ??= (async () => {
    const c = new pg.Client({ connectionString: `${PG_SERVER}/postgres`, connectionTimeoutMillis: 2000 });
    try {
      await c.connect();
      await c.query('SELECT 1');
      return true;
    } catch {
      return false;
    } finally {
      await c.end().catch(() => {});
    }
  })();
  return reachable;
}

/** Why PostgreSQL tests skip here, or false when they run (never skipped where it is required). */
export async function postgresSkip(): Promise<string | false> {
  if (await postgresReachable()) return false;
  if (required) throw new Error(`PostgreSQL is required (GATEWAY_REQUIRE_POSTGRES=1) but ${PG_SERVER} does not answer`);
  return `PostgreSQL at ${PG_SERVER} does not answer`;
}

async function admin<T>(database: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: `${PG_SERVER}/${database}` });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

let fileDatabase: Promise<string> | undefined;
let schemas = 0;

/** This test file's database (created on first use, dropped after the file's last test). */
function testDatabase(): Promise<string> {
  fileDatabase ??= (async () => {
    const name = `gw_test_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
    await admin('postgres', (c) => c.query(`CREATE DATABASE ${name}`));
    t.teardown(() => admin('postgres', (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)));
    return name;
  })();
  return fileDatabase;
}

/** The URL of a new, empty schema in this file's database: a store opened on it starts from nothing. */
export async function freshPostgresUrl(): Promise<string> {
  const database = await testDatabase();
  const schema = `s${++schemas}`;
  await admin(database, (c) => c.query(`CREATE SCHEMA ${schema}`));
  return `${PG_SERVER}/${database}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
}

/** A node: its own PostgreSQL store and pool on the database at `url` (as a separate process would have), opened, closed at teardown. */
export async function openPgNode(tt: Test, url: string, opts: Partial<PostgresStoreOptions> = {}): Promise<PostgresStore> {
  const store = openPostgresStore({ url, commitIntervalMs: 2, clock: Date.now, log: silentLogger, ...opts });
  tt.teardown(() => store.close().catch(() => {}));
  await store.sync();
  // Its first heartbeat and sweep run in the background: a test that counts sweeps must not have
  // this one release holds later, uncounted.
  await store.nodes.started;
  return store;
}
