// GET /v1/models in both shapes: the models this caller can actually use (permission + price cap).
import type { WireFormat, ModelConfig } from '../../lib/config-types.js';
import type { AuthInfo, Offer } from '../../lib/context.js';
import { usableOffers } from '../../lib/permissions.js';

/** Models without a `created` date in the config get this fixed one (stable across restarts). */
const DEFAULT_CREATED = '2025-01-01T00:00:00Z';

export function modelsList(models: ModelConfig[], offersByModel: Map<string, Offer[]>, auth: AuthInfo | undefined, format: WireFormat): object {
  const usable = models.filter((m) => usableOffers(auth, m.id, offersByModel.get(m.id) ?? []).length > 0);
  if (format === 'chat') {
    return {
      object: 'list',
      data: usable.map((m) => ({
        id: m.id,
        object: 'model',
        created: Math.floor(Date.parse(m.created ?? DEFAULT_CREATED) / 1000),
        owned_by: m.id.includes('/') ? m.id.slice(0, m.id.indexOf('/')) : 'gateway',
      })),
    };
  }
  return {
    data: usable.map((m) => ({
      type: 'model',
      id: m.id,
      display_name: m.display_name ?? m.id,
      created_at: new Date(Date.parse(m.created ?? DEFAULT_CREATED)).toISOString().replace('.000Z', 'Z'),
    })),
    has_more: false,
    first_id: usable[0]?.id ?? null,
    last_id: usable.at(-1)?.id ?? null,
  };
}
