// The PostgreSQL connection pool and the one way the store queries it. BIGINT columns come back as
// numbers (money and times are below 2^53; a larger value is an error, never a rounded number).
// A database that cannot be reached (refused, reset, restarting, timed out) is a StoreError
// 'unavailable', which the gateway answers with 503 and Retry-After; the pool survives it, and the
// next query connects again. Sessions commit asynchronously (synchronous_commit = off): a commit
// returns without waiting for the WAL flush, like the SQLite store's synchronous = NORMAL; a crash
// of the database server (not of a node) may lose the last few hundred milliseconds of holds and
// batches, never the consistency of what remains. Credits (grants, top-ups) commit synchronously.
import type pg from 'pg';
import { loadPg } from '../../optional-packages.js';
import type { Logger } from '../../log.js';
import { StoreError } from '../types.js';

const INT8_OID = 20;

function parseInt8(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new RangeError(`a BIGINT of ${text} is beyond exact numbers`);
  return n;
}

export const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === INT8_OID && format !== 'binary' ? parseInt8 : loadPg().types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/** How long a node waits for a connection, and for a statement, before it answers 503. */
export const CONNECT_TIMEOUT_MS = 3000;
export const STATEMENT_TIMEOUT_MS = 10_000;

/** SQLSTATE codes the store turns into its own errors. */
export const UNIQUE_VIOLATION = '23505';
export const FOREIGN_KEY_VIOLATION = '23503';

export interface Query {
  /** Prepared once per connection under this name (the hot path's statements). */
  name?: string;
  text: string;
  values?: unknown[];
}

/** Error codes (SQLSTATE classes 08, 53, 57 and transaction retries) and socket errors that mean the database is away or overloaded, not that the query is wrong. */
export function isUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  if (typeof e?.code === 'string') {
    if (/^(08|53|57)/.test(e.code) || e.code === '40001' || e.code === '40P01') return true;
    if (/^E[A-Z]+$/.test(e.code)) return true; // ECONNREFUSED, ECONNRESET, ETIMEDOUT, EPIPE, ENOTFOUND…
  }
  return /Connection terminated|timeout exceeded|Query read timeout|Client has encountered a connection error|not queryable/i.test(e?.message ?? '');
}

/**
 * A database error as the store reports it: unreachable → 'unavailable'; a value the database
 * cannot store (SQLSTATE class 22: a NUL in a text, a number out of range) → 'invalid'; else as is.
 */
function translate(err: unknown): never {
  if (isUnavailable(err)) throw new StoreError('unavailable', `the database cannot be reached: ${(err as Error).message}`);
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && code.startsWith('22')) throw new StoreError('invalid', `a value the database cannot store: ${(err as Error).message}`);
  throw err;
}

/** A transaction's client: its queries go to one connection, in order. */
export interface Tx {
  query<R = any>(q: Query | string, values?: unknown[]): Promise<R[]>;
}

export class Db {
  readonly pool: pg.Pool;
  /** The URL without its password, for messages. */
  readonly location: string;
  /** Every query waits for this: the store's opening (migrations, the node's registration). */
  private opening: Promise<void> = Promise.resolve();

  constructor(url: string, log: Logger, max = 10) {
    this.location = redact(url);
    this.pool = new (loadPg().Pool)({
      connectionString: withSessionOptions(url, '-c synchronous_commit=off'),
      max,
      types,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      statement_timeout: STATEMENT_TIMEOUT_MS,
      idle_in_transaction_session_timeout: STATEMENT_TIMEOUT_MS,
      // A last resort for a connection that went silent (no RST): the server's statement timeout ends the rest.
      query_timeout: STATEMENT_TIMEOUT_MS + CONNECT_TIMEOUT_MS,
      keepAlive: true,
      application_name: 'llm-gateway',
    });
    // An idle connection that breaks (the database restarted) is dropped by the pool; without a
    // listener the 'error' event would end the process.
    this.pool.on('error', (err) => log('warn', 'store: an idle database connection broke; the next query opens another', { err: err.message }));
  }

  /**
   * Run `open` (with `direct` queries) before any other query; a failure is every later query's
   * error (StoreError 'unavailable' when the database cannot be reached).
   */
  openWith(open: () => Promise<void>): Promise<void> {
    this.opening = open().catch((err) => {
      if (isUnavailable(err)) throw new StoreError('unavailable', `cannot reach the PostgreSQL database at ${this.location}: ${(err as Error).message}`);
      throw err;
    });
    this.opening.catch(() => {}); // reported to whoever queries next
    return this.opening;
  }

  /** A query that does not wait for the opening (the opening's own). */
  async direct<R = any>(q: Query | string, values?: unknown[]): Promise<R[]> {
    return (typeof q === 'string' ? await this.pool.query(q, values) : await this.pool.query({ ...q, values: q.values ?? values })).rows as R[];
  }

  async query<R = any>(q: Query | string, values?: unknown[]): Promise<R[]> {
    await this.opening;
    try {
      return await this.direct<R>(q, values);
    } catch (err) {
      translate(err);
    }
  }

  async one<R = any>(q: Query | string, values?: unknown[]): Promise<R | undefined> {
    return (await this.query<R>(q, values))[0];
  }

  /**
   * Run `fn` in a transaction on one connection; committed when it resolves, rolled back when it
   * throws. `durable`: the commit waits for the WAL flush (credits must survive a crash).
   * `genericPlans`: prepared statements run their generic plan (see BATCH_OPTIONS in batch.ts).
   */
  async transaction<T>(fn: (tx: Tx) => Promise<T>, opts: { durable?: boolean; genericPlans?: boolean } = {}): Promise<T> {
    await this.opening;
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      translate(err);
    }
    const tx: Tx = {
      async query(q, values) {
        return (typeof q === 'string' ? await client.query(q, values) : await client.query({ ...q, values: q.values ?? values })).rows;
      },
    };
    let broken: Error | undefined;
    // A connection that breaks while checked out emits 'error' on the client: unheard, it would end the process.
    const onError = (err: Error) => (broken ??= err);
    client.on('error', onError);
    try {
      // One round trip: the settings ride with BEGIN.
      let begin = 'BEGIN';
      if (opts.durable) begin += '; SET LOCAL synchronous_commit = on';
      if (opts.genericPlans) begin += '; SET LOCAL plan_cache_mode = force_generic_plan';
      await client.query(begin);
      const result = await fn(tx);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch((e) => (broken = e));
      if (isUnavailable(err)) broken ??= err as Error;
      translate(err);
    } finally {
      client.removeListener('error', onError);
      client.release(broken); // a broken connection is closed, not reused
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** The URL with `settings` added to the session's startup options (after any the URL has). */
function withSessionOptions(url: string, settings: string): string {
  const u = new URL(url);
  u.searchParams.set('options', [u.searchParams.get('options'), settings].filter(Boolean).join(' '));
  return u.toString();
}

/** postgres://user:secret@host/db → postgres://user:***@host/db */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@');
  }
}
