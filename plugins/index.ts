// The plugins a config may name, in their default order.
import type { PluginFactory } from '../lib/plugin.js';
import auth from './auth/index.js';
import schemaCheck from './schema-check/index.js';
import offerPick from './offer-pick/index.js';
import rateLimit from './rate-limit/index.js';
import budgetHold from './budget-hold/index.js';
import formatTransform from './format-transform/index.js';
import metering from './metering/index.js';

export const pluginFactories: Record<string, PluginFactory> = {
  auth,
  'schema-check': schemaCheck,
  'offer-pick': offerPick,
  'rate-limit': rateLimit,
  'budget-hold': budgetHold,
  'format-transform': formatTransform,
  metering,
};
