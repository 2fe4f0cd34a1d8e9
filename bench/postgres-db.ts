// The PostgreSQL database of the bench's PostgreSQL-mode gateways: a fresh one per run on the
// server at GATEWAY_BENCH_POSTGRES (default postgres://postgres@127.0.0.1:5432), dropped after,
// and its transaction count, from which the bench derives the database round trips per request.
import pg from 'pg';

export const PG_SERVER = process.env.GATEWAY_BENCH_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432';

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: `${PG_SERVER}/postgres`, connectionTimeoutMillis: 2000 });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => {});
  }
}

export interface BenchDatabase {
  /** The `storage.postgres` URL of the database. */
  url: string;
  /**
   * Transactions committed or rolled back in it so far, from pg_stat_database: every statement
   * outside a transaction is one, a batch in one transaction is one. Backends report their counts
   * with a delay of up to about 10 s (PostgreSQL 15's idle flush), so only differences over long
   * spans, read after the nodes are stopped, are exact.
   */
  transactions(): Promise<number>;
  drop(): Promise<void>;
}

/** A fresh, empty database, or why PostgreSQL mode cannot run. */
export async function createBenchDatabase(): Promise<BenchDatabase | string> {
  const name = `gw_bench_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  try {
    await admin((c) => c.query(`CREATE DATABASE ${name}`));
  } catch (err) {
    return `PostgreSQL at ${PG_SERVER} does not answer or cannot create a database (${(err as Error).message})`;
  }
  return {
    url: `${PG_SERVER}/${name}`,
    transactions: () =>
      admin(async (c) => {
        const { rows } = await c.query('SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1', [name]);
        return Number(rows[0]?.n ?? 0);
      }),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}
