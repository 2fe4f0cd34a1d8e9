// Offers from the config, resolved for the running gateway: integer prices, effective output
// ceilings, provider URLs. Built once per config load.
import type { GatewayConfig, PriceConfig } from './config-types.js';
import type { Offer, Provider, UnitPrices } from './context.js';
import { parseUsdPerMillion } from './store/money.js';

/**
 * A config price (USD per million tokens, ≤ 3 decimals, a YAML/JSON number) → nano-USD per token,
 * exactly: through its decimal text, by the one money parser (no float arithmetic).
 */
export function usdPerMillionToNanoPerToken(usdPerMillion: number): number {
  return parseUsdPerMillion(String(usdPerMillion));
}

export function unitPrices(p: PriceConfig): UnitPrices {
  const input = usdPerMillionToNanoPerToken(p.input);
  // A missing cache price bills those tokens as plain input (what they would have cost uncached).
  const cacheWrite = usdPerMillionToNanoPerToken(p.cache_write ?? p.input);
  return {
    input,
    output: usdPerMillionToNanoPerToken(p.output),
    cacheRead: usdPerMillionToNanoPerToken(p.cache_read ?? p.input),
    cacheWrite,
    // A missing 1-hour price errs high, never below what the vendor charges for them (2× input),
    // nor below the 5-minute price: an operator who forgot it is not billed more than the client pays.
    cacheWrite1h: p.cache_write_1h === undefined ? Math.max(2 * input, cacheWrite) : usdPerMillionToNanoPerToken(p.cache_write_1h),
  };
}

/** Offers grouped by model id. `simulatorUrl` is the in-process simulator's address, if one runs. */
export function resolveOffers(cfg: GatewayConfig, simulatorUrl?: string): Map<string, Offer[]> {
  const providers = new Map<string, Provider>();
  for (const p of cfg.providers) {
    if (p.simulated && !simulatorUrl) throw new Error(`provider ${p.id} is simulated but no simulator is running`);
    const base = p.simulated ? (p.format === 'chat' ? `${simulatorUrl}/v1` : simulatorUrl!) : p.base_url;
    providers.set(p.id, { ...p, url: new URL(base.replace(/\/+$/, '')) });
  }
  const models = new Map(cfg.models.map((m) => [m.id, m]));
  const byModel = new Map<string, Offer[]>();
  for (const m of cfg.models) byModel.set(m.id, []);
  for (const o of cfg.offers) {
    const model = models.get(o.model)!;
    byModel.get(o.model)!.push({
      listing: o.listing,
      model,
      provider: providers.get(o.provider)!,
      upstreamModel: o.upstream_model,
      prices: unitPrices(o.price),
      maxOutputTokens: Math.min(o.max_output_tokens ?? model.max_output_tokens, model.max_output_tokens),
      subscription: o.subscription ?? false,
      supports: { tools: true, images: true, reasoning: true, json_schema: true, documents: true, ...o.supports },
    });
  }
  return byModel;
}
