// `gateway db copy --from FILE`: a whole SQLite store into an empty PostgreSQL store, so an operator
// who started on one node can move to several.
//
// * The SQLite file's lock (sqlite/lock.ts) is held for the whole copy: a gateway serving the file
//   makes the copy refuse, and none can start on it meanwhile. The file is brought to this version's
//   schema first (what `serve` would do) and otherwise only read, in one read transaction (one
//   snapshot, even if a command writes to it meanwhile).
// * The target is migrated, then everything is written in one PostgreSQL transaction that first
//   locks the copied tables against writers and refuses a target that holds any row or has a live
//   node. Ids are kept; identity sequences move past them; the change counter never moves back.
// * Rows are streamed: read in key order from SQLite, written in multi-row INSERTs of at most
//   PAGE_ROWS rows, so memory stays bounded however long the history is.
// * Before COMMIT the copy is verified (copy-verify.ts); any mismatch rolls everything back.
import Database from 'better-sqlite3';
import type pg from 'pg';
import { loadPg } from '../../optional-packages.js';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { GatewayConfig } from '../../config-types.js';
import { lockDatabase } from '../sqlite/lock.js';
import { migrateFile } from '../sqlite/open.js';
import { migrateStore } from '../index.js';
import { StoreError } from '../types.js';
import { isUnavailable } from './db.js';
import { NODE_DEAD_AFTER_MS } from './nodes.js';
import { COPIED_TABLES, sourceSelect, type CopiedTable } from './copy-tables.js';
import { verifyCopy, type TableFigures } from './copy-verify.js';

/** Rows per INSERT (fewer for wide tables: PostgreSQL takes at most 65,535 parameters per statement). */
const PAGE_ROWS = 1000;
const MAX_PARAMS = 60_000;

export interface CopyReport {
  from: string;
  to: string;
  /** Migrations applied first: to the SQLite file, and to the PostgreSQL database. */
  migrated: { sqlite: string[]; postgres: string[] };
  tables: TableFigures[];
  /** Holds open in the file (of a gateway that is gone), copied as released. */
  releasedOpenHolds: number;
  accountsVerified: number;
  totalBalanceNano: string;
  changeCounter: number;
  elapsedMs: number;
}

/** The copy cannot start: nothing was written. */
export class CopyRefused extends Error {}

/** The copy did not verify: it was rolled back, nothing was written. */
export class CopyMismatch extends Error {
  constructor(readonly mismatches: string[], readonly report: CopyReport) {
    super(`the copy does not match its source; rolled back, nothing was written:\n  ${mismatches.join('\n  ')}`);
  }
}

export async function copySqliteToPostgres(from: string, config: GatewayConfig, onTable?: (t: TableFigures) => void): Promise<CopyReport> {
  const url = config.storage.postgres;
  if (url === undefined) throw new CopyRefused('db copy writes to the config\'s storage.postgres, and this config has none');
  const path = resolve(from);
  if (!existsSync(path)) throw new CopyRefused(`no SQLite store at ${path}`);
  const started = performance.now();
  const lock = lockDatabase(path); // DatabaseInUseError: a gateway serves the file
  try {
    const migratedSqlite = migrateFile(path);
    const { location, applied } = await migrateStore(config);
    const source = new Database(path, { readonly: true, fileMustExist: true });
    source.defaultSafeIntegers(true); // exact integers whatever their size
    const target = new (loadPg().Client)({ connectionString: url, application_name: 'llm-gateway db copy' });
    target.on('error', () => {}); // a broken connection fails the next query, which rolls back
    try {
      await target.connect().catch((err) => {
        throw isUnavailable(err) ? new StoreError('unavailable', `cannot reach the PostgreSQL database at ${location}: ${err.message}`) : err;
      });
      source.exec('BEGIN');
      await target.query('BEGIN; SET LOCAL statement_timeout = 0; SET LOCAL synchronous_commit = on');
      try {
        await refuseUnlessEmpty(target, location);
        const now = Date.now();
        const releasedOpenHolds = Number(source.prepare(`SELECT COUNT(*) FROM holds WHERE status = 'open'`).pluck().get());
        for (const t of COPIED_TABLES) {
          const rows = await copyTable(source, target, t, now);
          onTable?.({ name: t.name, rows });
        }
        await advanceSequences(target);
        const sourceCounter = source.prepare('SELECT n FROM change_counter').pluck().get() as bigint;
        const [{ n }] = (await target.query('UPDATE change_counter SET n = GREATEST(n, $1) RETURNING n::text', [sourceCounter.toString()])).rows;
        const verified = await verifyCopy(source, target, COPIED_TABLES);
        const report: CopyReport = {
          from: path, to: location, migrated: { sqlite: migratedSqlite, postgres: applied }, tables: verified.tables, releasedOpenHolds,
          accountsVerified: verified.accountsVerified, totalBalanceNano: verified.totalBalanceNano, changeCounter: Number(n),
          elapsedMs: 0,
        };
        if (verified.mismatches.length) throw new CopyMismatch(verified.mismatches, { ...report, elapsedMs: Math.round(performance.now() - started) });
        await target.query('COMMIT');
        return { ...report, elapsedMs: Math.round(performance.now() - started) };
      } catch (err) {
        await target.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        source.exec('COMMIT');
      }
    } finally {
      source.close();
      await target.end().catch(() => {});
    }
  } finally {
    lock.release();
  }
}

/**
 * Lock the copied tables against writers (a second copy, a command, a node starting) until the
 * transaction ends, then refuse unless all are empty and no node is alive.
 */
async function refuseUnlessEmpty(target: pg.ClientBase, location: string): Promise<void> {
  await target.query(`LOCK TABLE ${COPIED_TABLES.map((t) => t.name).join(', ')} IN EXCLUSIVE MODE`);
  const filled: string[] = [];
  for (const t of COPIED_TABLES) {
    if ((await target.query(`SELECT EXISTS (SELECT 1 FROM ${t.name}) AS filled`)).rows[0].filled) filled.push(t.name);
  }
  if (filled.length) {
    throw new CopyRefused(`the PostgreSQL store at ${location} is not empty (rows in ${filled.join(', ')}); db copy only fills an empty store`);
  }
  const [{ live }] = (await target.query(`SELECT COUNT(*)::int AS live FROM nodes WHERE heartbeat_at >= gateway_now_ms() - $1`, [NODE_DEAD_AFTER_MS])).rows;
  if (live > 0) throw new CopyRefused(`${live} gateway node(s) are serving from ${location}: stop them before copying into it`);
}

/** Stream one table from SQLite into PostgreSQL; returns the rows copied. */
async function copyTable(source: Database.Database, target: pg.ClientBase, t: CopiedTable, now: number): Promise<number> {
  const width = t.columns.length;
  const pageRows = Math.min(PAGE_ROWS, Math.floor(MAX_PARAMS / width));
  let page: unknown[] = [];
  let rows = 0;
  const flush = async () => {
    const n = page.length / width;
    // A full page's statement is prepared once (named); the last, shorter one is not.
    await target.query({ ...(n === pageRows ? { name: `copy_${t.name}` } : {}), text: insertText(t, n), values: page });
    rows += n;
    page = [];
  };
  for (const row of source.prepare(sourceSelect(t, now)).raw(true).iterate() as Iterable<unknown[]>) {
    for (const v of row) page.push(typeof v === 'bigint' ? v.toString() : v);
    if (page.length === pageRows * width) await flush();
  }
  if (page.length) await flush();
  return rows;
}

function insertText(t: CopiedTable, rows: number): string {
  const width = t.columns.length;
  const tuples = Array.from({ length: rows }, (_, r) => `(${t.columns.map((_, c) => `$${r * width + c + 1}`).join(', ')})`);
  return `INSERT INTO ${t.name} (${t.columns.join(', ')}) VALUES ${tuples.join(', ')}`;
}

/** Identity columns hand out ids above the copied ones (the copy inserted explicit ids, which does not move them). */
async function advanceSequences(target: pg.ClientBase): Promise<void> {
  for (const t of COPIED_TABLES.filter((t) => t.identity)) {
    await target.query(`SELECT setval(pg_get_serial_sequence('${t.name}', '${t.identity}'), COALESCE(MAX(${t.identity}), 0) + 1, false) FROM ${t.name}`);
  }
}
