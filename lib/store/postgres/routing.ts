// Per-account routing settings on PostgreSQL: allowed and denied models, price caps (nano-USD per token).
import type { RoutingSettings } from '../../context.js';
import type { Routing } from '../types.js';
import { routingValues, toRouting, type RoutingRow } from '../rows.js';
import type { ChangeCounter } from './changes.js';
import type { Db } from './db.js';

export class PgRouting implements Routing {
  constructor(private readonly db: Db, private readonly changes: ChangeCounter) {}

  async get(accountId: number): Promise<RoutingSettings> {
    return toRouting(await this.db.one<RoutingRow>({ name: 'gateway_routing', text: 'SELECT * FROM routing_settings WHERE account_id = $1' }, [accountId]));
  }

  async set(accountId: number, patch: Partial<RoutingSettings>): Promise<RoutingSettings> {
    const next = { ...(await this.get(accountId)), ...patch };
    await this.db.query(`INSERT INTO routing_settings AS r (account_id, allow_models, deny_models, price_cap_input, price_cap_output)
      VALUES ($1, $2, $3, $4, $5) ON CONFLICT (account_id) DO UPDATE SET allow_models = excluded.allow_models,
      deny_models = excluded.deny_models, price_cap_input = excluded.price_cap_input, price_cap_output = excluded.price_cap_output`,
      [accountId, ...routingValues(next)]);
    this.changes.bump();
    return next;
  }
}
