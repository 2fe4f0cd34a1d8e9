// Opening the SQLite file: pragmas, then the migrations in lib/store/migrations, in name order.
import Database from 'better-sqlite3';
import { createRequire } from 'node:module';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { packageRoot } from '../../package-root.js';

export type Db = Database.Database;

/** Found from the package root, so the same folder serves source (tests) and compiled code in dist/. */
export const migrationsDir = join(packageRoot(), 'lib', 'store', 'migrations');

/**
 * better-sqlite3 12 aborts the process at random on Node 24.19 and later (a statement freed by the
 * garbage collector: nodejs/node#65446); 13 fixes it but needs Node 22. The lockfile carries 12 (it
 * runs on Node 20), so an install on a newer Node must be told to take 13, not crash in production.
 */
export function sqliteDriverProblem(nodeVersion = process.versions.node, driverVersion = driverVersionOf()): string | null {
  const [major, minor] = nodeVersion.split('.').map(Number);
  const driverMajor = Number(driverVersion.split('.')[0]);
  if ((major > 24 || (major === 24 && minor >= 19)) && driverMajor < 13) {
    return `better-sqlite3 ${driverVersion} aborts on Node ${nodeVersion} (nodejs/node#65446): ` +
      'run `npm install better-sqlite3@13` (Node 22 and later), or run the gateway on Node 20 or 22';
  }
  return null;
}

function driverVersionOf(): string {
  const file = createRequire(import.meta.url).resolve('better-sqlite3/package.json');
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

export function openDatabase(file: string): Db {
  const problem = sqliteDriverProblem();
  if (problem) throw new Error(problem);
  const path = file === ':memory:' ? file : resolve(file);
  if (path !== ':memory:') {
    mkdirSync(dirname(path), { recursive: true });
    createPrivateFile(path);
  }
  // Waits (blocking) for another process's write lock; only the rare command-line writes contend.
  const db = new Database(path, { timeout: 5000 });
  db.pragma('journal_mode = WAL');
  // synchronous = NORMAL: in WAL mode a commit is a write() to the WAL, without fsync; the WAL is
  // synced at checkpoints. A killed process loses nothing committed (the OS has the pages); a power
  // loss or kernel crash may lose the last commits, never the file's consistency. FULL would add an
  // fsync per commit on the event loop. Credit grants and top-ups are the exception: they switch to
  // FULL for their own commit (see durableTransaction), so a confirmed credit survives power loss.
  db.pragma('synchronous = NORMAL');
  try {
    migrate(db); // turns foreign keys on when done
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/**
 * Create `path` readable by its owner only, unless it exists (an existing file keeps its mode).
 * The database holds password and key hashes and the ledger; SQLite gives its -wal and -shm files
 * the database file's mode.
 */
export function createPrivateFile(path: string): void {
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/** Apply the pending migrations; returns the names applied. */
function migrate(db: Db): string[] {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)');
  const files = readdirSync(migrationsDir).filter((f) => f.endsWith('.sql')).sort();
  const applied = db.prepare('SELECT 1 FROM schema_migrations WHERE name = ?').pluck();
  const record = db.prepare('INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)');
  // Off while migrating (SQLite's procedure for rebuilding a table that others refer to; the pragma
  // cannot change inside a transaction): each migration must leave every foreign key satisfied.
  db.pragma('foreign_keys = OFF');
  // Defensive mode (better-sqlite3 turns it on) forbids writing sqlite_schema, which SQLite's own
  // procedure for changing a CHECK constraint does (010_checks_without_temporary_btrees.sql).
  db.unsafeMode(true);
  const done: string[] = [];
  try {
    for (const name of files) {
      if (applied.get(name)) continue;
      const sql = readFileSync(join(migrationsDir, name), 'utf8');
      // IMMEDIATE takes the write lock first, so two processes opening at once apply each file once.
      db.transaction(() => {
        if (applied.get(name)) return;
        db.exec(sql);
        const broken = db.pragma('foreign_key_check') as { table: string; rowid: number; parent: string }[];
        if (broken.length) {
          const [b] = broken;
          throw new Error(`migration ${name} left ${broken.length} broken foreign keys (${b.table} row ${b.rowid} → ${b.parent})`);
        }
        record.run(name, Date.now());
        done.push(name);
      }).immediate();
    }
  } finally {
    db.unsafeMode(false);
    db.pragma('foreign_keys = ON');
  }
  return done;
}

/** `gateway db migrate` on a SQLite file: create it if needed and apply what is pending; returns the names applied. */
export function migrateFile(file: string): string[] {
  const path = resolve(file);
  mkdirSync(dirname(path), { recursive: true });
  createPrivateFile(path);
  const db = new Database(path, { timeout: 5000 });
  try {
    db.pragma('journal_mode = WAL');
    return migrate(db);
  } finally {
    db.close();
  }
}

/** Run `fn` in a write transaction committed with an fsync (for credits that must survive power loss). */
export function durableTransaction<T>(db: Db, fn: () => T): T {
  db.pragma('synchronous = FULL');
  try {
    return db.transaction(fn).immediate();
  } finally {
    db.pragma('synchronous = NORMAL');
  }
}
