// Model ids and their aliases (config models[].aliases) → the model they name. The config check
// (lib/config.ts) makes sure no alias is a model's id or another alias, so each key names one model.
import type { ModelConfig } from '../../lib/config-types.js';

export function modelIndex(models: ModelConfig[]): Map<string, ModelConfig> {
  const byId = new Map<string, ModelConfig>();
  for (const m of models) {
    byId.set(m.id, m);
    for (const alias of m.aliases ?? []) byId.set(alias, m);
  }
  return byId;
}
