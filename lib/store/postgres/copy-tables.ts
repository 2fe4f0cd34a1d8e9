// What `gateway db copy` moves from a SQLite store to a PostgreSQL one, table by table, in an
// order that satisfies the PostgreSQL schema's foreign keys (accounts before keys, holds and
// payments before the journal entries that name them). Each table is read in key order, so rows are
// streamed and the copy can be checked table by table. The SQLite-only schema_migrations is not
// copied (the target has its own); neither is the nodes table (PostgreSQL only), nor
// password_resets: a reset link lives an hour and is used once, so the operator makes a new one
// after the move rather than a live secret being carried to another database.

export interface CopiedTable {
  name: string;
  /** The PostgreSQL columns, in the order `select` produces them. */
  columns: string[];
  /** The SQLite expressions giving those columns (defaults to the same names). */
  select?: string[];
  /** The primary key, for the read order. */
  key: string;
  /** A money column whose sum must agree on both sides (a conversion or truncation error shows there). */
  sum?: string;
  /** Identity column whose sequence must move past the copied ids. */
  identity?: string;
}

/** Where a copied open hold is marked as having ended (see the holds entry). */
export const COPY_NOW = '$copy_now';

const HISTORY_COLUMNS = ['request_id', 'time', 'account_id', 'key_id', 'route', 'model', 'requested_model', 'listing', 'attempts',
  'status', 'http_status', 'stream', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cache_write_1h_tokens',
  'hold', 'cost', 'latency_ms', 'ttfb_ms', 'error', 'not_recorded'];

export const COPIED_TABLES: CopiedTable[] = [
  { name: 'accounts', key: 'id', identity: 'id', columns: ['id', 'email', 'password_hash', 'created_at'] },
  {
    name: 'api_keys', key: 'id', identity: 'id',
    columns: ['id', 'account_id', 'name', 'prefix', 'hash', 'allowed_models', 'monthly_limit', 'rpm', 'tpm', 'created_at', 'revoked_at', 'last_used_at'],
  },
  { name: 'routing_settings', key: 'account_id', columns: ['account_id', 'allow_models', 'deny_models', 'price_cap_input', 'price_cap_output'] },
  {
    name: 'payments', key: 'id', identity: 'id', sum: 'amount',
    columns: ['id', 'account_id', 'provider_ref', 'amount', 'method', 'status', 'failure_reason', 'created_at', 'updated_at'],
  },
  {
    // A hold still open in the file belonged to a gateway process that is gone (the copy holds the
    // file's lock, so none serves it): no charge of it was recorded, and the SQLite store itself
    // releases such holds when it next opens. The copy does the same in the target only (the file
    // is not changed): released, ended at the copy's time, charged 0. The owning process is kept in
    // node_id ('sqlite:<pid>:<token>'), which no live node's id can equal.
    name: 'holds', key: 'id', sum: 'charged',
    columns: ['id', 'account_id', 'key_id', 'request_id', 'amount', 'status', 'charged', 'created_at', 'ended_at', 'node_id'],
    select: ['id', 'account_id', 'key_id', 'request_id', 'amount', `CASE status WHEN 'open' THEN 'released' ELSE status END`, 'charged',
      'created_at', `CASE status WHEN 'open' THEN ${COPY_NOW} ELSE ended_at END`, `'sqlite:' || owner_pid || ':' || owner_token`],
  },
  {
    name: 'journal', key: 'id', identity: 'id', sum: 'amount',
    columns: ['id', 'account_id', 'key_id', 'kind', 'amount', 'hold_id', 'payment_id', 'note', 'created_at'],
  },
  { name: 'balances', key: 'account_id', sum: 'balance', columns: ['account_id', 'balance'] },
  { name: 'key_spend', key: 'key_id, month', sum: 'spent', columns: ['key_id', 'month', 'spent'] },
  {
    // stream is 0/1 in SQLite, BOOLEAN in PostgreSQL.
    name: 'request_history', key: 'request_id', sum: 'cost', columns: HISTORY_COLUMNS,
    select: HISTORY_COLUMNS.map((c) => (c === 'stream' ? `CASE WHEN stream THEN 'true' ELSE 'false' END` : c)),
  },
  { name: 'dashboard_sessions', key: 'token_hash', columns: ['token_hash', 'account_id', 'created_at', 'expires_at'] },
];

/** The SQLite SELECT of a table's rows in key order; `now` replaces COPY_NOW. */
export function sourceSelect(t: CopiedTable, now: number): string {
  const exprs = (t.select ?? t.columns).map((e) => e.replace(COPY_NOW, String(now)));
  return `SELECT ${exprs.join(', ')} FROM ${t.name} ORDER BY ${t.key}`;
}
