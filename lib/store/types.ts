// The storage contract, implemented by the SQLite store (lib/store/sqlite) and the PostgreSQL store
// (lib/store/postgres): promises wherever a networked store waits.
// Money is integer nano-USD (1e-9 USD); times are milliseconds since the epoch.
import type { Attempt, Outcome, Route, RoutingSettings, Usage } from '../context.js';
import type { MaybePromise } from '../maybe-promise.js';

export interface Account {
  id: number;
  email: string;
  createdAt: number;
  /** A dashboard login exists (the hash itself never leaves the store). */
  hasPassword: boolean;
}

export interface Accounts {
  /** Throws StoreError 'conflict' when the email is taken (emails compare case-insensitively). */
  create(input: { email: string; password?: string }): Promise<Account>;
  byEmail(email: string): Promise<Account | null>;
  byId(id: number): Promise<Account | null>;
  count(): Promise<number>;
  /**
   * The account this email and dashboard password belong to, or null (unknown email, no password
   * set, wrong password). Costs one password hash whether or not the email exists.
   */
  checkPassword(email: string, password: string): Promise<Account | null>;
  /**
   * Replace the account's dashboard password and end all its dashboard sessions, in one
   * transaction (the operator's recovery path: whoever held a session is logged out). Returns how
   * many sessions ended; StoreError 'not_found' when there is no such account. `keepSession`: the
   * token of a session that stays (the owner changing their own password stays logged in there).
   */
  setPassword(accountId: number, password: string, keepSession?: string): Promise<{ sessionsEnded: number }>;
}

export interface DashboardSession {
  accountId: number;
  expiresAt: number;
}

/** Dashboard logins. A session token is a random secret handed to the browser; only its hash is kept. */
export interface Sessions {
  create(accountId: number, ttlMs: number): Promise<{ token: string; expiresAt: number }>;
  /** The live session of this token; null when unknown, ended or expired. */
  get(token: string): Promise<DashboardSession | null>;
  /** End it (log out); an unknown token is ignored. */
  end(token: string): Promise<void>;
  /** The account's live sessions, newest first; `current` marks the one of `currentToken`. No token or hash is handed out. */
  listFor(accountId: number, currentToken?: string): Promise<SessionSummary[]>;
  /** End every session of the account except the one of `keepToken` (sign out other browsers); returns how many ended. */
  endOthers(accountId: number, keepToken: string): Promise<number>;
}

export interface SessionSummary {
  createdAt: number;
  expiresAt: number;
  /** The session of the token the caller gave (the browser asking). */
  current: boolean;
}

/**
 * One-time links that let an account owner set a forgotten dashboard password, made by the
 * operator (`gateway accounts reset-link`): no e-mail needed. Like a session token, the link's
 * token is a random secret of which only the sha256 is stored.
 */
export interface PasswordResets {
  /** A new token for the account, valid for ttlMs; the account's earlier tokens stop working. */
  create(accountId: number, ttlMs: number): Promise<{ token: string; expiresAt: number }>;
  /** The live token's account, without using it; null when unknown, used or expired. */
  find(token: string): Promise<{ accountId: number; expiresAt: number } | null>;
  /** Use the token up: of any number of uses at once, one gets the account id, the others null (as do unknown, used and expired tokens). */
  consume(token: string): Promise<number | null>;
}

/** 'cancelled': the payer came back from cancelling and the provider's session was expired, so it can never be paid. */
export type PaymentStatus = 'pending' | 'confirmed' | 'failed' | 'cancelled';
export type PaymentMethod = 'card' | 'stablecoin';

export interface Payment {
  id: number;
  accountId: number;
  /** The payment provider's id for it (a Stripe Checkout Session id): one payment, one row. */
  providerRef: string;
  amountNano: number;
  method: PaymentMethod;
  status: PaymentStatus;
  /** Why it failed, in the provider's words (e.g. "Your card was declined."); null when it said nothing. */
  failureReason: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface NewPayment {
  accountId: number;
  providerRef: string;
  amountNano: number;
  method: PaymentMethod;
}

/** Top-ups through a payment provider. Only a confirmed payment credits the balance. */
export interface Payments {
  /** Record a payment begun with the provider, as pending. StoreError 'conflict' when the reference exists. */
  create(input: NewPayment): Promise<Payment>;
  byRef(providerRef: string): Promise<Payment | null>;
  byId(id: number): Promise<Payment | null>;
  /** Newest first. */
  list(accountId: number, opts?: { limit?: number }): Promise<Payment[]>;
  /**
   * Mark the payment confirmed and credit its amount (a 'topup' entry) in one durable transaction;
   * `credited` is false when it was confirmed before, so any number of confirmations, in any order
   * or at once, credit it exactly once. null when the reference is unknown.
   */
  confirm(providerRef: string): Promise<{ payment: Payment; credited: boolean } | null>;
  /**
   * Mark a pending payment failed, with the provider's reason when it gave one (a confirmed or
   * cancelled one stays as it is); null when unknown.
   */
  fail(providerRef: string, reason?: string | null): Promise<Payment | null>;
  /** Mark a pending payment cancelled (any other stays as it is); null when unknown. */
  cancel(providerRef: string): Promise<Payment | null>;
}

export interface ApiKeyRecord {
  id: number;
  accountId: number;
  name: string;
  /** Short display form, e.g. "sk-service-AbC12xYz…"; also the lookup handle (not secret). */
  prefix: string;
  /** null = any model. */
  allowedModels: string[] | null;
  monthlyLimitNano: number | null;
  /** Requests per minute; null = the config's rate_limits.requests_per_minute. */
  rpm: number | null;
  /** Tokens per minute; null = the config's rate_limits.tokens_per_minute. */
  tpm: number | null;
  createdAt: number;
  revokedAt: number | null;
  lastUsedAt: number | null;
}

/** A key record with its secret's hash, for the constant-time comparison in auth. */
export interface ApiKeyCredential extends ApiKeyRecord {
  hash: Buffer;
}

export interface NewApiKey {
  accountId: number;
  name: string;
  allowedModels?: string[] | null;
  monthlyLimitNano?: number | null;
  rpm?: number | null;
  tpm?: number | null;
}

export type KeyPatch = Partial<Omit<NewApiKey, 'accountId'>>;

export interface ApiKeys {
  /** The secret is returned once and never stored (only its sha256 and display prefix are). */
  create(input: NewApiKey): Promise<{ key: ApiKeyRecord; secret: string }>;
  list(accountId: number): Promise<ApiKeyRecord[]>;
  get(id: number): Promise<ApiKeyRecord | null>;
  /** false when the key is unknown or already revoked. */
  revoke(id: number): Promise<boolean>;
  /**
   * Change an active key's name, allowed models, monthly limit or rate limits (the fields present in
   * `patch`, checked as at creation); null when the key is unknown or revoked.
   */
  update(id: number, patch: KeyPatch): Promise<ApiKeyRecord | null>;
  /** Keys (revoked ones included) whose display prefix is `prefix`; usually zero or one. */
  findByPrefix(prefix: string): Promise<ApiKeyCredential[]>;
  /** Record use of a key; written with the next batch (last-used time is advisory). */
  touch(id: number): void;
}

export interface Routing {
  /** The account's settings; defaults (no restriction) when none were set. */
  get(accountId: number): Promise<RoutingSettings>;
  /** Changes only the fields present in `patch`. */
  set(accountId: number, patch: Partial<RoutingSettings>): Promise<RoutingSettings>;
}

export type EntryKind = 'grant' | 'topup' | 'charge' | 'adjustment';

export interface LedgerEntry {
  id: number;
  accountId: number;
  keyId: number | null;
  kind: EntryKind;
  /** Signed: credits positive, charges negative. */
  amountNano: number;
  holdId: string | null;
  note: string | null;
  createdAt: number;
}

export interface BalanceSummary {
  /** Posted credits − posted charges. */
  balance: number;
  /** Open holds: of every node (PostgreSQL); of this process and those other processes on the file have written (SQLite). */
  held: number;
  /** balance − held; never below zero. */
  available: number;
}

export interface Hold {
  id: string;
  accountId: number;
  keyId: number;
  amount: number;
  createdAt: number;
}

export interface ReserveRequest {
  accountId: number;
  keyId: number;
  amount: number;
  /** The key's monthly limit; null = none. */
  monthlyLimitNano: number | null;
  /** Request id, kept with the hold for tracing. */
  requestId?: string;
}

export type ReserveRefusal =
  | { ok: false; reason: 'insufficient_credit'; amount: number; available: number }
  | { ok: false; reason: 'monthly_limit_reached'; amount: number; limit: number; monthToDate: number; keyHeld: number }
  | { ok: false; reason: 'hold_too_large'; amount: number; exceeds: 'balance'; balance: number }
  | { ok: false; reason: 'hold_too_large'; amount: number; exceeds: 'monthly_limit'; limit: number }
  /** The store cannot write what it has queued (see WriteBatcher.backlogged): no hold is admitted. */
  | { ok: false; reason: 'store_backlogged'; amount: number };

export type ReserveResult = { ok: true; hold: Hold } | ReserveRefusal;

export interface Ledger {
  balance(accountId: number): Promise<BalanceSummary>;
  /** The key's posted charges in the current calendar month (UTC). */
  monthToDate(keyId: number): Promise<number>;
  /** The account's open holds (requests in flight) summed per key; keys without any are absent. */
  heldByKey(accountId: number): Promise<Map<number, number>>;
  // reserve, settle and release run on every request: a store that decides them in memory (the
  // embedded one: their rows follow in a batch) answers at once, a networked one with a promise.
  /**
   * Admit and create a hold atomically: available balance and the key's month-to-date spend plus
   * open holds are checked and the hold is counted before any other reserve can run.
   */
  reserve(req: ReserveRequest): MaybePromise<ReserveResult>;
  /**
   * End a hold with a charge, clamped to [0, hold]; the rest is released. Returns the amount
   * charged, or null when the hold is unknown or already ended (each hold ends exactly once).
   */
  settle(holdId: string, chargeNano: number): MaybePromise<number | null>;
  /** This process's open holds and the nano-USD they hold (from memory; metrics). */
  openHolds?(): { count: number; nano: number };
  /** End a hold without charge; false when unknown or already ended. */
  release(holdId: string): MaybePromise<boolean>;
  /**
   * The sweeper's safety net: release the open holds created before `before` (ms since the epoch),
   * which no request can still be using. Returns their ids.
   */
  releaseExpired(before: number): Promise<string[]>;
  /** Add operator credit (kind 'grant'); durable before the promise resolves. */
  grant(accountId: number, amountNano: number, note?: string): Promise<LedgerEntry>;
  /** Newest first. */
  entries(accountId: number, opts?: { limit?: number }): Promise<LedgerEntry[]>;
  /**
   * Every posted movement of the balance: each entry that is not a charge, and the charges summed
   * per UTC day; together they sum to the posted balance (charges still queued are not in it: flush first).
   */
  statement(accountId: number): Promise<Statement>;
}

/** One UTC day of an account's posted charges, summed. */
export interface DailyCharges {
  /** The day's start (UTC midnight). */
  day: number;
  /** Charge entries that day. */
  count: number;
  /** Their sum: negative. */
  amountNano: number;
}

export interface Statement {
  /** Grants, top-ups and adjustments, newest first. */
  credits: LedgerEntry[];
  /** Newest day first. */
  charges: DailyCharges[];
}

export type HistoryStatus = Outcome;

export interface HistoryRow {
  requestId: string;
  /** Arrival time. */
  time: number;
  accountId: number;
  keyId: number;
  route: Route;
  /** The model's id (an alias resolved to it); for an unknown model, what the client sent. */
  model: string | null;
  /** The id the client sent when it was an alias of `model` (config models[].aliases); else absent or null. */
  requestedModel?: string | null;
  /** The serving offer's listing. */
  listing: string | null;
  attempts: Attempt[];
  status: HistoryStatus;
  httpStatus: number | null;
  stream: boolean;
  usage: Usage;
  holdNano: number;
  costNano: number;
  latencyMs: number;
  /** Time to first byte; null when nothing was sent. */
  ttfbMs: number | null;
  error: string | null;
  /**
   * Set only on a summary row: this many more refusals of the key in the minute from `time` were
   * counted but not recorded one row each (see History.recordRefusal); its `error` says so.
   */
  notRecorded?: number;
}

export interface HistoryQuery {
  limit?: number;
  model?: string;
  status?: HistoryStatus;
  keyId?: number;
  route?: Route;
  /**
   * Request ids that start with this (exactly, case and all: a caller normalises what a person
   * typed). Searched by range on the request id's own index, so its cost follows the matches.
   */
  idPrefix?: string;
  /** Arrival at or after this time. */
  from?: number;
  /** Arrival before this time. */
  to?: number;
  /** Paging: rows that come after this one in the list (older, or as old with a smaller id). */
  after?: { time: number; requestId: string };
  /**
   * Paging back: rows that come before this one in the list (newer). list() then returns the
   * `limit` rows nearest to it, still newest first.
   */
  before?: { time: number; requestId: string };
}

/** Sums over the rows a query matches (its limit left aside). */
export interface HistoryTotals {
  /** Rows listed (a summary of refusals is one row). */
  rows: number;
  /** Requests they stand for (a summary row stands for the refusals it counts). */
  requests: number;
  /** Input tokens, cache reads and writes included. */
  inputTokens: number;
  outputTokens: number;
  costNano: number;
}

/** One UTC day of an account's requests. */
export interface DailyUsage {
  /** The day's start (UTC midnight). */
  day: number;
  requests: number;
  costNano: number;
}

export interface History {
  /** Queued; durable with the next batch. */
  record(row: HistoryRow): void;
  /**
   * A request refused before any upstream call: recorded like `record` for the first few of its key
   * in a minute, then only counted, in one summary row per key and minute, so refusals cannot fill
   * the disk. Money is never involved (a refused request holds and charges nothing).
   */
  recordRefusal(row: HistoryRow): void;
  /** Refusals counted in a summary row instead of recorded, since the store opened (for metrics). */
  refusalsNotRecorded(): number;
  get(requestId: string): Promise<HistoryRow | null>;
  /** Newest first (by arrival time, then request id). */
  list(accountId: number, opts?: HistoryQuery): Promise<HistoryRow[]>;
  /** Sums over every row of the account that `opts` matches (limit left aside). */
  totals(accountId: number, opts?: HistoryQuery): Promise<HistoryTotals>;
  /** The same sums per model or per key (rows without a model under null), largest spend first. */
  totalsBy<K extends 'model' | 'keyId'>(accountId: number, by: K, opts?: HistoryQuery): Promise<(HistoryTotals & { group: HistoryRow[K] })[]>;
  /** Requests and their cost per UTC day, for arrivals in [from, to); days without requests are left out. */
  daily(accountId: number, from: number, to: number): Promise<DailyUsage[]>;
}

/** Told of each batch the store writes (metrics). */
export interface BatchObserver {
  committed(seconds: number): void;
  failed(): void;
}

/** The state of the store's writes, for readiness and metrics. Cheap: read from memory. */
export interface StoreWrites {
  /** Rows waiting to be written (queued, or in the batch in flight). */
  unwritten(): number;
  /** Why the store cannot take new requests now (backlog at its bound, batches failing, database unreachable); null when it can. */
  problem(): string | null;
  observe(observer: BatchObserver): void;
}

export interface Store {
  /** Absent in test doubles: taken as always writing. */
  readonly writes?: StoreWrites;
  readonly accounts: Accounts;
  readonly keys: ApiKeys;
  readonly routing: Routing;
  readonly ledger: Ledger;
  readonly history: History;
  readonly sessions: Sessions;
  readonly passwordResets: PasswordResets;
  readonly payments: Payments;
  /** Where the data lives (file path for SQLite), for messages and test helpers. */
  readonly location: string;
  /**
   * Take in changes made by other processes (the command line, a dashboard): their credits, and
   * the change counter, which moves whenever keys, routing or accounts changed (here or
   * elsewhere), so a cache keyed on it is never stale by more than one call. Cheap when nothing
   * changed. A value when nothing had to be asked (SQLite always; PostgreSQL while listening).
   */
  sync(): MaybePromise<number>;
  /**
   * Gateway processes sharing this store and alive (this one included, at least 1); limits kept
   * in memory per process give each 1/N of their allowance. Absent: the only one (SQLite).
   */
  liveNodes?(): number;
  /** The change counter as this process knows it (its own changes and the last sync's), without asking the database. */
  changeVersion(): number;
  /** Write everything queued now; resolves once it is committed (by the writer thread, when there is one). */
  flush(): Promise<void>;
  /** Flush, release holds still open, close. */
  close(): Promise<void>;
}

/** 'unavailable': the database cannot be reached at the moment (a networked store); the gateway answers 503. */
export type StoreErrorCode = 'conflict' | 'not_found' | 'invalid' | 'unavailable';

export class StoreError extends Error {
  constructor(readonly code: StoreErrorCode, message: string) {
    super(message);
    this.name = 'StoreError';
  }
}
