// Migrations of the PostgreSQL store: lib/store/postgres/migrations/*.sql in name order, each in
// its own transaction (PostgreSQL's DDL is transactional), recorded in schema_migrations. Any number
// of nodes may start at once: the first to take the advisory lock applies what is pending, the
// others wait for it and then find nothing left to do. The lock is per schema, so stores in
// different schemas of one database migrate independently.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../package-root.js';
import type { Db } from './db.js';

/** Found from the package root, so the same folder serves source (tests) and compiled code in dist/. */
export const pgMigrationsDir = join(packageRoot(), 'lib', 'store', 'postgres', 'migrations');

/** The advisory lock's first key: this program's migrations (the second is the schema's hash). */
const MIGRATION_LOCK = 0x67770001;

/** Apply the pending migrations; returns the names applied (none when the database is current). */
export async function migrate(db: Db): Promise<string[]> {
  const files = readdirSync(pgMigrationsDir).filter((f) => f.endsWith('.sql')).sort();
  // A session lock, on one connection held for the whole run.
  const client = await db.pool.connect();
  let broken: Error | undefined;
  const onError = (err: Error) => (broken ??= err); // a break while checked out must not end the process
  client.on('error', onError);
  try {
    await client.query('SELECT pg_advisory_lock($1, hashtext(current_schema()))', [MIGRATION_LOCK]);
    try {
      await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)');
      const done = new Set((await client.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name));
      const unknown = [...done].filter((n) => !files.includes(n));
      if (unknown.length) throw new Error(`the database has migrations this gateway does not know (${unknown.join(', ')}): it was migrated by a newer version`);
      const applied: string[] = [];
      for (const name of files) {
        if (done.has(name)) continue;
        await client.query('BEGIN');
        try {
          await client.query(readFileSync(join(pgMigrationsDir, name), 'utf8'));
          await client.query('INSERT INTO schema_migrations (name, applied_at) VALUES ($1, $2)', [name, Date.now()]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => {});
          throw new Error(`migration ${name} failed: ${(err as Error).message}`, { cause: err });
        }
        applied.push(name);
      }
      return applied;
    } finally {
      await client.query('SELECT pg_advisory_unlock($1, hashtext(current_schema()))', [MIGRATION_LOCK]).catch((e) => (broken = e));
    }
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}
