// API key records on PostgreSQL. The secret is generated here, returned once, and only its hash is kept.
import type { ApiKeyCredential, ApiKeyRecord, ApiKeys, KeyPatch, NewApiKey } from '../types.js';
import { StoreError } from '../types.js';
import { draftKey, draftRecord, patchedKey, toKeyRecord, type KeyRow } from '../rows.js';
import { KeyedRows, type WriteBatcher } from '../write-batcher.js';
import type { MonthClock } from '../month.js';
import type { PgBatch } from './batch.js';
import type { ChangeCounter } from './changes.js';
import { FOREIGN_KEY_VIOLATION, type Db } from './db.js';

export class PgApiKeys implements ApiKeys {
  /** key id → last use, written with the next batch. */
  private readonly used: KeyedRows<PgBatch, number, number>;

  constructor(
    private readonly db: Db,
    batcher: WriteBatcher<PgBatch>,
    private readonly changes: ChangeCounter,
    private readonly months: MonthClock,
  ) {
    this.used = new KeyedRows(batcher, (batch, id, at) => void batch.touches.set(id, at));
  }

  async create(input: NewApiKey): Promise<{ key: ApiKeyRecord; secret: string }> {
    const d = draftKey(input);
    const now = this.months.now();
    try {
      const r = await this.db.one<{ id: number }>(`INSERT INTO api_keys (account_id, name, prefix, hash, allowed_models, monthly_limit, rpm, tpm, created_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
        [input.accountId, d.name, d.prefix, d.hash, d.modelsJson, d.monthlyLimitNano, d.rpm, d.tpm, now]);
      this.changes.bump();
      return { key: draftRecord(d, r!.id, input.accountId, now), secret: d.secret };
    } catch (err) {
      if ((err as { code?: string }).code === FOREIGN_KEY_VIOLATION) throw new StoreError('not_found', `no account ${input.accountId}`);
      throw err;
    }
  }

  async list(accountId: number): Promise<ApiKeyRecord[]> {
    return (await this.db.query<KeyRow>('SELECT * FROM api_keys WHERE account_id = $1 ORDER BY id', [accountId])).map(toKeyRecord);
  }

  async get(id: number): Promise<ApiKeyRecord | null> {
    const r = await this.db.one<KeyRow>('SELECT * FROM api_keys WHERE id = $1', [id]);
    return r ? toKeyRecord(r) : null;
  }

  async revoke(id: number): Promise<boolean> {
    const r = await this.db.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING id', [this.months.now(), id]);
    if (r.length > 0) this.changes.bump();
    return r.length > 0;
  }

  async update(id: number, patch: KeyPatch): Promise<ApiKeyRecord | null> {
    const key = await this.get(id);
    if (!key || key.revokedAt !== null) return null;
    const v = patchedKey(key, patch);
    const r = await this.db.one<KeyRow>(`UPDATE api_keys SET name = $1, allowed_models = $2, monthly_limit = $3, rpm = $4, tpm = $5
      WHERE id = $6 AND revoked_at IS NULL RETURNING *`, [v.name, v.modelsJson, v.monthlyLimitNano, v.rpm, v.tpm, id]);
    if (!r) return null;
    this.changes.bump();
    return toKeyRecord(r);
  }

  async findByPrefix(prefix: string): Promise<ApiKeyCredential[]> {
    const rows = await this.db.query<KeyRow>({ name: 'gateway_key_by_prefix', text: 'SELECT * FROM api_keys WHERE prefix = $1' }, [prefix]);
    return rows.map((r) => ({ ...toKeyRecord(r), hash: r.hash }));
  }

  touch(id: number): void {
    this.used.set(id, this.months.now());
  }
}
