// Which models and offers an account's routing settings leave usable: the gateway's own permission
// functions, applied to a caller with no key restrictions (keys can only narrow this further).
import type { ModelConfig } from '../config-types.js';
import type { AuthInfo, Offer, RoutingSettings } from '../context.js';
import { modelRefusal, withinPriceCap } from '../permissions.js';

export interface ModelUsability {
  model: ModelConfig;
  offers: { offer: Offer; withinCap: boolean }[];
  usable: boolean;
  /** A short reason when not usable. */
  reason: string | null;
}

export function modelUsability(accountId: number, routing: RoutingSettings, models: ModelConfig[], offersByModel: Map<string, Offer[]>): ModelUsability[] {
  const auth: AuthInfo = { accountId, keyId: 0, keyAllowedModels: null, monthlyLimitNano: null, routing };
  return models.map((model) => {
    const offers = (offersByModel.get(model.id) ?? []).map((offer) => ({ offer, withinCap: withinPriceCap(auth, offer) }));
    const reason = modelRefusal(auth, model.id) !== null
      ? (routing.deny.includes(model.id) ? 'Denied in your routing settings' : 'Not in your allowed models')
      : offers.length === 0 ? 'No offers'
      : offers.some((o) => o.withinCap) ? null : 'Every offer is above your price cap';
    return { model, offers, usable: reason === null, reason };
  });
}
