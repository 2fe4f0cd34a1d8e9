// Plain SQL on a store's database, whichever it is, for tests that look at or change the rows
// themselves: a SQLite file path or a postgres:// URL. `?` placeholders work on both; integers
// (BIGINT, COUNT, SUM) come back as numbers from both.
import Database from 'better-sqlite3';
import pg from 'pg';

export interface Sql {
  readonly backend: 'sqlite' | 'postgres';
  all(text: string, ...params: unknown[]): Promise<any[]>;
  get(text: string, ...params: unknown[]): Promise<any>;
  /** The first column of the first row. */
  value(text: string, ...params: unknown[]): Promise<any>;
  /** Statements without results (several at once). */
  exec(text: string): Promise<void>;
  close(): Promise<void>;
}

export const isPostgres = (location: string) => /^postgres(ql)?:\/\//.test(location);

const toNumber = (v: string) => {
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw new RangeError(`${v} is not an exact number`);
  return n;
};
const INT8 = 20, NUMERIC = 1700;

export async function openSql(location: string, opts: { readonly?: boolean } = {}): Promise<Sql> {
  if (isPostgres(location)) {
    const client = new pg.Client({
      connectionString: location,
      types: { getTypeParser: ((oid: number, format: any) => (oid === INT8 || oid === NUMERIC ? toNumber : pg.types.getTypeParser(oid, format))) as any },
    });
    await client.connect();
    const numbered = (text: string) => {
      let n = 0;
      return text.replace(/\?/g, () => `$${++n}`);
    };
    const all = async (text: string, ...params: unknown[]) => (await client.query(numbered(text), params)).rows;
    return {
      backend: 'postgres',
      all,
      get: async (text, ...params) => (await all(text, ...params))[0],
      value: async (text, ...params) => {
        const r = (await client.query({ text: numbered(text), values: params, rowMode: 'array' })).rows[0];
        return r?.[0];
      },
      exec: async (text) => void (await client.query(text)),
      close: () => client.end(),
    };
  }
  const db = new Database(location, { readonly: opts.readonly ?? false, fileMustExist: true });
  return {
    backend: 'sqlite',
    all: async (text, ...params) => db.prepare(text).all(...params),
    get: async (text, ...params) => db.prepare(text).get(...params),
    value: async (text, ...params) => db.prepare(text).pluck().get(...params),
    exec: async (text) => void db.exec(text),
    close: async () => void db.close(),
  };
}
