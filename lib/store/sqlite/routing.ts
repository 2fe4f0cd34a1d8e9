// Per-account routing settings: allowed and denied models, price caps (nano-USD per token).
import type { RoutingSettings } from '../../context.js';
import type { Routing } from '../types.js';
import { routingValues, toRouting, type RoutingRow } from '../rows.js';
import type { ChangeWatcher } from './changes.js';
import type { Db } from './open.js';

export class SqliteRouting implements Routing {
  private readonly stmt;

  constructor(db: Db, private readonly changes: ChangeWatcher) {
    this.stmt = {
      get: db.prepare('SELECT * FROM routing_settings WHERE account_id = ?'),
      put: db.prepare(`INSERT INTO routing_settings (account_id, allow_models, deny_models, price_cap_input, price_cap_output)
        VALUES (?, ?, ?, ?, ?) ON CONFLICT (account_id) DO UPDATE SET allow_models = excluded.allow_models,
        deny_models = excluded.deny_models, price_cap_input = excluded.price_cap_input,
        price_cap_output = excluded.price_cap_output`),
    };
  }

  async get(accountId: number): Promise<RoutingSettings> {
    return toRouting(this.stmt.get.get(accountId) as RoutingRow | undefined);
  }

  async set(accountId: number, patch: Partial<RoutingSettings>): Promise<RoutingSettings> {
    const next = { ...(await this.get(accountId)), ...patch };
    this.stmt.put.run(accountId, ...routingValues(next));
    this.changes.bump();
    return next;
  }
}
