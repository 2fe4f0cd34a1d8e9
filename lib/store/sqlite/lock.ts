// One serving process per database file. Each serving process admits from its own in-memory
// balance, so two on one file would each spend the same credit. The server holds `<db>.lock`, a
// tiny SQLite file locked with SQLite's own (OS-level) file lock, which the kernel drops when the
// process dies: a SIGKILLed server leaves no stale lock, and a recycled pid cannot pass for the
// holder. The command line opens the database itself, never this file, so it works beside a server.
import Database from 'better-sqlite3';
import { existsSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { createPrivateFile } from './open.js';

/** Lock files held by this process (a second SQLite connection here would also be refused, but reading
 *  the holder's pid from the file would close a descriptor and so drop this process's POSIX lock). */
const heldHere = new Set<string>();

export interface DatabaseLock {
  readonly path: string;
  release(): void;
}

/** Next to the file's real path: a symlinked path to the same database finds the same lock. */
export function lockPathOf(dbPath: string): string {
  if (existsSync(dbPath)) return `${realpathSync(dbPath)}.lock`;
  mkdirSync(dirname(dbPath), { recursive: true });
  return join(realpathSync(dirname(dbPath)), `${basename(dbPath)}.lock`);
}

/** Another process serves from this database; the message is one line for the operator. */
export class DatabaseInUseError extends Error {
  constructor(readonly dbPath: string, readonly lockPath: string, readonly pid: number | undefined) {
    super(`database ${dbPath} is in use by another gateway (${pid ? `pid ${pid}` : 'another process'}, lock ${lockPath}); one serving process per database`);
    this.name = 'DatabaseInUseError';
  }
}

/** Take `<dbPath>.lock`, or throw DatabaseInUseError naming the holder's pid and the file. */
export function lockDatabase(dbPath: string): DatabaseLock {
  const path = lockPathOf(dbPath);
  if (heldHere.has(path)) throw new DatabaseInUseError(dbPath, path, process.pid);
  createPrivateFile(path);
  const db = new Database(path, { timeout: 0 });
  try {
    // EXCLUSIVE locking mode keeps the write lock taken below until the connection closes. The
    // holder's pid goes in the header's user_version (offset 60), readable without SQLite.
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = MEMORY');
    db.exec('BEGIN EXCLUSIVE');
    db.pragma(`user_version = ${process.pid}`);
    db.exec('COMMIT');
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code === 'SQLITE_BUSY') throw new DatabaseInUseError(dbPath, path, holderPid(path));
    throw err;
  }
  heldHere.add(path);
  // The reference in this closure keeps `db` from being garbage-collected (which would close it).
  return {
    path,
    release() {
      if (!db.open) return;
      db.close();
      heldHere.delete(path);
    },
  };
}

function holderPid(lockPath: string): number | undefined {
  try {
    const pid = readFileSync(lockPath).readUInt32BE(60);
    return pid || undefined;
  } catch {
    return undefined;
  }
}
