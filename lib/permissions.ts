// The one permission function: what a key may call is exactly what GET /v1/models lists.
import type { AuthInfo, Offer } from './context.js';

/** Why a model is refused for this key, or null when it is allowed. */
export function modelRefusal(auth: AuthInfo | undefined, modelId: string): string | null {
  if (!auth) return null;
  if (auth.keyAllowedModels && !auth.keyAllowedModels.includes(modelId))
    return `Model ${modelId} is not in this API key's allowed models (${auth.keyAllowedModels.join(', ') || 'none'}). Check the key's allowed models and the account's routing model lists.`;
  if (auth.routing.allow && !auth.routing.allow.includes(modelId))
    return `Model ${modelId} is not in the account's routing allowed-models list. Check the key's allowed models and the account's routing model lists.`;
  if (auth.routing.deny.includes(modelId))
    return `Model ${modelId} is in the account's routing denied-models list. Check the key's allowed models and the account's routing model lists.`;
  return null;
}

/** Is the offer within the account's price cap? */
export function withinPriceCap(auth: AuthInfo | undefined, offer: Offer): boolean {
  if (!auth) return true;
  const { priceCapInput, priceCapOutput } = auth.routing;
  return (priceCapInput === null || offer.prices.input <= priceCapInput) && (priceCapOutput === null || offer.prices.output <= priceCapOutput);
}

/** The offers of a model this caller may use (empty when the model itself is refused). */
export function usableOffers(auth: AuthInfo | undefined, modelId: string, offers: Offer[]): Offer[] {
  if (modelRefusal(auth, modelId) !== null) return [];
  return offers.filter((o) => withinPriceCap(auth, o));
}
