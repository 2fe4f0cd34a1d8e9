// Rows as both databases store them, the records the store hands out for them, and the checks of
// what callers give before anything is written: one definition for the SQLite and PostgreSQL stores.
import { createHash, randomBytes } from 'node:crypto';
import type { RoutingSettings } from '../context.js';
import { generateApiKey, hashApiKey, keyPrefix } from './api-key.js';
import { hashPassword, verifyPassword } from './password.js';
import { DAY_MS } from './queued-history.js';
import type { Account, ApiKeyRecord, DailyCharges, EntryKind, KeyPatch, LedgerEntry, NewApiKey, Payment, PaymentStatus, SessionSummary } from './types.js';
import { StoreError } from './types.js';

// --- accounts ---

const EMAIL = /^[^\s@]+@[^\s@]+$/;

export interface AccountRow {
  id: number;
  email: string;
  password_hash: string | null;
  created_at: number;
}

export const toAccount = (r: AccountRow): Account =>
  ({ id: r.id, email: r.email, createdAt: r.created_at, hasPassword: r.password_hash !== null });

/** The email as stored (trimmed, lower-case); StoreError 'invalid' when it is not one. */
export function normalEmail(input: string): string {
  const email = input.trim().toLowerCase();
  if (!EMAIL.test(email)) throw new StoreError('invalid', `"${input}" is not an email address`);
  return email;
}

/** Compared against when the email is unknown, so that such a login takes as long as a real one. */
let standIn: Promise<string> | undefined;

/** The account of `row` when `password` is its dashboard password; costs one hash whether or not the row exists. */
export async function checkAccountPassword(row: AccountRow | undefined, password: string): Promise<Account | null> {
  const stored = row?.password_hash ?? (await (standIn ??= hashPassword(randomBytes(16).toString('hex'))));
  const ok = await verifyPassword(password, stored);
  return ok && row?.password_hash ? toAccount(row) : null;
}

// --- API keys ---

export interface KeyRow {
  id: number;
  account_id: number;
  name: string;
  prefix: string;
  hash: Buffer;
  allowed_models: string | null;
  monthly_limit: number | null;
  rpm: number | null;
  tpm: number | null;
  created_at: number;
  revoked_at: number | null;
  last_used_at: number | null;
}

export const toKeyRecord = (r: KeyRow): ApiKeyRecord => ({
  id: r.id, accountId: r.account_id, name: r.name, prefix: r.prefix,
  allowedModels: r.allowed_models === null ? null : JSON.parse(r.allowed_models),
  monthlyLimitNano: r.monthly_limit, rpm: r.rpm, tpm: r.tpm, createdAt: r.created_at, revokedAt: r.revoked_at, lastUsedAt: r.last_used_at,
});

/** A key's own rate limit: a positive integer, or null for the config's default. */
function rateLimit(v: number | null | undefined, what: string): number | null {
  if (v === undefined || v === null) return null;
  if (!Number.isSafeInteger(v) || v < 1) throw new StoreError('invalid', `the ${what} must be a positive whole number`);
  return v;
}

/** A new key checked and made: its secret (returned once) and the values of its row. */
export interface KeyDraft {
  secret: string;
  name: string;
  prefix: string;
  hash: Buffer;
  allowedModels: string[] | null;
  /** allowed_models as stored. */
  modelsJson: string | null;
  monthlyLimitNano: number | null;
  rpm: number | null;
  tpm: number | null;
}

function monthlyLimit(v: number | null | undefined): number | null {
  const limit = v ?? null;
  if (limit !== null && (!Number.isSafeInteger(limit) || limit < 0)) {
    throw new StoreError('invalid', 'the monthly limit must be a non-negative amount');
  }
  return limit;
}

function keyName(v: string): string {
  const name = v.trim();
  if (!name) throw new StoreError('invalid', 'a key needs a name');
  return name;
}

/** Check a new key's fields (StoreError 'invalid') and generate its secret. */
export function draftKey(input: NewApiKey): KeyDraft {
  const limit = monthlyLimit(input.monthlyLimitNano);
  const rpm = rateLimit(input.rpm, 'requests per minute');
  const tpm = rateLimit(input.tpm, 'tokens per minute');
  const name = keyName(input.name);
  const secret = generateApiKey();
  const models = input.allowedModels ?? null;
  return {
    secret, name, prefix: keyPrefix(secret), hash: hashApiKey(secret), allowedModels: models,
    modelsJson: models === null ? null : JSON.stringify(models), monthlyLimitNano: limit, rpm, tpm,
  };
}

/** A key's row values after `patch` (checked as at creation: StoreError 'invalid'). */
export function patchedKey(k: ApiKeyRecord, patch: KeyPatch): { name: string; modelsJson: string | null; monthlyLimitNano: number | null; rpm: number | null; tpm: number | null } {
  const models = patch.allowedModels === undefined ? k.allowedModels : patch.allowedModels;
  return {
    name: patch.name === undefined ? k.name : keyName(patch.name),
    modelsJson: models === null ? null : JSON.stringify(models),
    monthlyLimitNano: patch.monthlyLimitNano === undefined ? k.monthlyLimitNano : monthlyLimit(patch.monthlyLimitNano),
    rpm: patch.rpm === undefined ? k.rpm : rateLimit(patch.rpm, 'requests per minute'),
    tpm: patch.tpm === undefined ? k.tpm : rateLimit(patch.tpm, 'tokens per minute'),
  };
}

export const draftRecord = (d: KeyDraft, id: number, accountId: number, createdAt: number): ApiKeyRecord => ({
  id, accountId, name: d.name, prefix: d.prefix, allowedModels: d.allowedModels, monthlyLimitNano: d.monthlyLimitNano,
  rpm: d.rpm, tpm: d.tpm, createdAt, revokedAt: null, lastUsedAt: null,
});

// --- routing ---

export interface RoutingRow {
  allow_models: string | null;
  deny_models: string;
  price_cap_input: number | null;
  price_cap_output: number | null;
}

export const NO_ROUTING: RoutingSettings = { allow: null, deny: [], priceCapInput: null, priceCapOutput: null };

export const toRouting = (r: RoutingRow | undefined): RoutingSettings => r ? {
  allow: r.allow_models === null ? null : JSON.parse(r.allow_models),
  deny: JSON.parse(r.deny_models),
  priceCapInput: r.price_cap_input,
  priceCapOutput: r.price_cap_output,
} : { ...NO_ROUTING };

/** The settings as a row's values: allow, deny, input cap, output cap. */
export const routingValues = (s: RoutingSettings) =>
  [s.allow === null ? null : JSON.stringify(s.allow), JSON.stringify(s.deny), s.priceCapInput, s.priceCapOutput] as const;

// --- payments ---

export interface PaymentRow {
  id: number;
  account_id: number;
  provider_ref: string;
  amount: number;
  method: Payment['method'];
  status: PaymentStatus;
  failure_reason: string | null;
  created_at: number;
  updated_at: number;
}

export const toPayment = (r: PaymentRow): Payment => ({
  id: r.id, accountId: r.account_id, providerRef: r.provider_ref, amountNano: r.amount, method: r.method,
  status: r.status, failureReason: r.failure_reason ?? null, createdAt: r.created_at, updatedAt: r.updated_at,
});

export function checkPaymentAmount(amountNano: number): void {
  if (!Number.isSafeInteger(amountNano) || amountNano <= 0) throw new StoreError('invalid', 'a payment must be a positive amount');
}

// --- the journal ---

/** A day's charges summed (day = created_at / DAY_MS, a whole number of days since the epoch). */
export interface DailyChargeRow {
  day: number;
  count: number;
  amount: number;
}

export const toDailyCharges = (r: DailyChargeRow): DailyCharges => ({ day: Number(r.day) * DAY_MS, count: Number(r.count), amountNano: Number(r.amount) });

export interface JournalRow {
  id: number;
  account_id: number;
  key_id: number | null;
  kind: EntryKind;
  amount: number;
  hold_id: string | null;
  note: string | null;
  created_at: number;
}

export const toLedgerEntry = (r: JournalRow): LedgerEntry => ({
  id: r.id, accountId: r.account_id, keyId: r.key_id, kind: r.kind, amountNano: r.amount,
  holdId: r.hold_id, note: r.note, createdAt: r.created_at,
});

/** A credit entry to post: an operator grant, or the top-up of a confirmed payment. */
export interface CreditDraft {
  accountId: number;
  amountNano: number;
  kind: 'grant' | 'topup';
  note: string | null;
  paymentId: number | null;
}

// --- dashboard sessions ---

/** The browser holds a random token, the table its sha256 (a leaked database does not log anyone in). */
export const hashSessionToken = (token: string) => createHash('sha256').update(token).digest();

export const newSessionToken = () => randomBytes(32).toString('base64url');

/** A new session or reset token made at `now`, valid for ttlMs: the secret to hand out, and its row's hash and expiry. */
export function draftToken(now: number, ttlMs: number): { token: string; hash: Buffer; expiresAt: number } {
  const token = newSessionToken();
  return { token, hash: hashSessionToken(token), expiresAt: now + ttlMs };
}

/** A session as the settings page lists it: its times, and whether it is the asking browser's (0/1 in SQLite). */
export interface SessionSummaryRow {
  created_at: number;
  expires_at: number;
  current: number | boolean;
}

export const toSessionSummary = (r: SessionSummaryRow): SessionSummary =>
  ({ createdAt: r.created_at, expiresAt: r.expires_at, current: Boolean(r.current) });
