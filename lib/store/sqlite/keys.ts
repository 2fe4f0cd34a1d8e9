// API key records. The secret is generated here, returned once, and only its hash is kept.
import type { ApiKeyCredential, ApiKeyRecord, ApiKeys, NewApiKey } from '../types.js';
import { StoreError } from '../types.js';
import { generateApiKey, hashApiKey, keyPrefix } from '../api-key.js';
import { QueuedRows, type BatchPart, type WriteBatcher } from '../write-batcher.js';
import type { Batch } from './batch.js';
import type { ChangeWatcher } from './changes.js';
import type { MonthClock } from '../month.js';
import type { Db } from './open.js';

interface KeyRow {
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

const toRecord = (r: KeyRow): ApiKeyRecord => ({
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

export class SqliteApiKeys implements ApiKeys, BatchPart<Batch> {
  private readonly stmt;
  /** key id → last use, written with the next batch. */
  private readonly used = new QueuedRows<number, number>();

  constructor(
    db: Db,
    private readonly batcher: WriteBatcher<Batch>,
    private readonly changes: ChangeWatcher,
    private readonly months: MonthClock,
  ) {
    this.stmt = {
      insert: db.prepare(`INSERT INTO api_keys (account_id, name, prefix, hash, allowed_models, monthly_limit, rpm, tpm, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      list: db.prepare('SELECT * FROM api_keys WHERE account_id = ? ORDER BY id'),
      get: db.prepare('SELECT * FROM api_keys WHERE id = ?'),
      byPrefix: db.prepare('SELECT * FROM api_keys WHERE prefix = ?'),
      revoke: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
    };
    batcher.add(this);
  }

  async create(input: NewApiKey): Promise<{ key: ApiKeyRecord; secret: string }> {
    const limit = input.monthlyLimitNano ?? null;
    if (limit !== null && (!Number.isSafeInteger(limit) || limit < 0)) {
      throw new StoreError('invalid', 'the monthly limit must be a non-negative amount');
    }
    const rpm = rateLimit(input.rpm, 'requests per minute');
    const tpm = rateLimit(input.tpm, 'tokens per minute');
    const name = input.name.trim();
    if (!name) throw new StoreError('invalid', 'a key needs a name');
    const secret = generateApiKey();
    const models = input.allowedModels ?? null;
    const now = this.months.now();
    try {
      const r = this.stmt.insert.run(input.accountId, name, keyPrefix(secret), hashApiKey(secret),
        models === null ? null : JSON.stringify(models), limit, rpm, tpm, now);
      this.changes.bump();
      const key: ApiKeyRecord = {
        id: Number(r.lastInsertRowid), accountId: input.accountId, name, prefix: keyPrefix(secret),
        allowedModels: models, monthlyLimitNano: limit, rpm, tpm, createdAt: now, revokedAt: null, lastUsedAt: null,
      };
      return { key, secret };
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_FOREIGNKEY') {
        throw new StoreError('not_found', `no account ${input.accountId}`);
      }
      throw err;
    }
  }

  async list(accountId: number): Promise<ApiKeyRecord[]> {
    return (this.stmt.list.all(accountId) as KeyRow[]).map(toRecord);
  }

  async get(id: number): Promise<ApiKeyRecord | null> {
    const r = this.stmt.get.get(id) as KeyRow | undefined;
    return r ? toRecord(r) : null;
  }

  async revoke(id: number): Promise<boolean> {
    const changed = this.stmt.revoke.run(this.months.now(), id).changes > 0;
    if (changed) this.changes.bump();
    return changed;
  }

  async findByPrefix(prefix: string): Promise<ApiKeyCredential[]> {
    return (this.stmt.byPrefix.all(prefix) as KeyRow[]).map((r) => ({ ...toRecord(r), hash: r.hash }));
  }

  touch(id: number): void {
    this.used.queued.set(id, this.months.now());
    this.batcher.schedule();
  }

  take(batch: Batch): void {
    for (const [id, at] of this.used.take()) batch.touchKey.push(at, id);
  }

  unwritten(): number {
    return this.used.size;
  }

  committed(): void {
    this.used.committed();
  }

  failed(): void {
    this.used.failed();
  }
}
