// API key records. The secret is generated here, returned once, and only its hash is kept.
import type { ApiKeyCredential, ApiKeyRecord, ApiKeys, KeyPatch, NewApiKey } from '../types.js';
import { StoreError } from '../types.js';
import { draftKey, draftRecord, patchedKey, toKeyRecord, type KeyRow } from '../rows.js';
import { KeyedRows, type WriteBatcher } from '../write-batcher.js';
import type { Batch } from './batch.js';
import type { ChangeWatcher } from './changes.js';
import type { MonthClock } from '../month.js';
import type { Db } from './open.js';

export class SqliteApiKeys implements ApiKeys {
  private readonly stmt;
  /** key id → last use, written with the next batch. */
  private readonly used: KeyedRows<Batch, number, number>;

  constructor(
    db: Db,
    batcher: WriteBatcher<Batch>,
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
      update: db.prepare(`UPDATE api_keys SET name = ?, allowed_models = ?, monthly_limit = ?, rpm = ?, tpm = ?
        WHERE id = ? AND revoked_at IS NULL RETURNING *`),
    };
    this.used = new KeyedRows(batcher, (batch, id, at) => batch.touchKey.push(at, id));
  }

  async create(input: NewApiKey): Promise<{ key: ApiKeyRecord; secret: string }> {
    const d = draftKey(input);
    const now = this.months.now();
    try {
      const r = this.stmt.insert.run(input.accountId, d.name, d.prefix, d.hash, d.modelsJson, d.monthlyLimitNano, d.rpm, d.tpm, now);
      this.changes.bump();
      return { key: draftRecord(d, Number(r.lastInsertRowid), input.accountId, now), secret: d.secret };
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_FOREIGNKEY') {
        throw new StoreError('not_found', `no account ${input.accountId}`);
      }
      throw err;
    }
  }

  async list(accountId: number): Promise<ApiKeyRecord[]> {
    return (this.stmt.list.all(accountId) as KeyRow[]).map(toKeyRecord);
  }

  async get(id: number): Promise<ApiKeyRecord | null> {
    const r = this.stmt.get.get(id) as KeyRow | undefined;
    return r ? toKeyRecord(r) : null;
  }

  async revoke(id: number): Promise<boolean> {
    const changed = this.stmt.revoke.run(this.months.now(), id).changes > 0;
    if (changed) this.changes.bump();
    return changed;
  }

  async update(id: number, patch: KeyPatch): Promise<ApiKeyRecord | null> {
    const key = await this.get(id);
    if (!key || key.revokedAt !== null) return null;
    const v = patchedKey(key, patch);
    const r = this.stmt.update.get(v.name, v.modelsJson, v.monthlyLimitNano, v.rpm, v.tpm, id) as KeyRow | undefined;
    if (!r) return null;
    this.changes.bump();
    return toKeyRecord(r);
  }

  async findByPrefix(prefix: string): Promise<ApiKeyCredential[]> {
    return (this.stmt.byPrefix.all(prefix) as KeyRow[]).map((r) => ({ ...toKeyRecord(r), hash: r.hash }));
  }

  touch(id: number): void {
    this.used.set(id, this.months.now());
  }
}
