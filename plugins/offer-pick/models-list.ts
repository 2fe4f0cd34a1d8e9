// GET /v1/models and GET /v1/models/{id} in both shapes: the models this caller can actually use
// (the one permission function, and the price cap), as the vendors answer them. The messages shape
// is paged the vendor's way (limit, after_id, before_id → has_more, first_id, last_id); the chat
// shape is one list, as OpenAI's is. An alias resolves to its model but is listed nowhere.
import type { WireFormat, ModelConfig } from '../../lib/config-types.js';
import type { AuthInfo, Offer } from '../../lib/context.js';
import { GatewayError, badRequest } from '../../lib/errors.js';
import { modelRefusal, usableOffers, withinPriceCap } from '../../lib/permissions.js';

/** Models without a `created` date in the config get this fixed one (stable across restarts). */
const DEFAULT_CREATED = '2025-01-01T00:00:00Z';
/** The vendor's page size: 20 unless `limit` says otherwise, at most 1000. */
const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 1000;
/** The vendor's lifecycle stages; every model of the config is `active`. */
const LIFECYCLES = new Set(['active', 'deprecated', 'retired']);

/** What the models routes read: the config's models in order, and ids and aliases → their model. */
export interface ModelCatalog {
  models: ModelConfig[];
  byId: Map<string, ModelConfig>;
  offersByModel: Map<string, Offer[]>;
}

const isUsable = (catalog: ModelCatalog, auth: AuthInfo | undefined, m: ModelConfig) =>
  usableOffers(auth, m.id, catalog.offersByModel.get(m.id) ?? []).length > 0;

function chatItem(m: ModelConfig): object {
  return {
    id: m.id,
    object: 'model',
    created: Math.floor(Date.parse(m.created ?? DEFAULT_CREATED) / 1000),
    owned_by: m.id.includes('/') ? m.id.slice(0, m.id.indexOf('/')) : 'gateway',
  };
}

/** The vendor's ModelInfo: what the gateway does not know (capabilities, a model line) is null. */
function messagesItem(m: ModelConfig): object {
  return {
    type: 'model',
    id: m.id,
    display_name: m.display_name ?? m.id,
    created_at: new Date(Date.parse(m.created ?? DEFAULT_CREATED)).toISOString().replace('.000Z', 'Z'),
    max_input_tokens: m.context_window,
    max_tokens: m.max_output_tokens,
    lifecycle: 'active',
    deprecated_at: null,
    retires_at: null,
    line: null,
    capabilities: null,
  };
}

/** GET /v1/models. `query` is read by the messages shape only. */
export function listModels(catalog: ModelCatalog, auth: AuthInfo | undefined, format: WireFormat, query: URLSearchParams): object {
  const usable = catalog.models.filter((m) => isUsable(catalog, auth, m));
  if (format === 'chat') return { object: 'list', data: usable.map(chatItem) };
  const page = pageOf(usable, query, catalog.byId);
  return {
    data: page.items.map(messagesItem),
    has_more: page.hasMore,
    first_id: page.items[0]?.id ?? null,
    last_id: page.items.at(-1)?.id ?? null,
  };
}

/**
 * The vendor's paging: `limit` items after `after_id`, or the `limit` items just before
 * `before_id` (has_more: more lie beyond the page in the direction of paging), else from the start.
 */
function pageOf(models: ModelConfig[], query: URLSearchParams, byId: Map<string, ModelConfig>): { items: ModelConfig[]; hasMore: boolean } {
  const lifecycle = [...query.getAll('lifecycle'), ...query.getAll('lifecycle[]')].flatMap((v) => v.split(','));
  const unknown = lifecycle.find((v) => !LIFECYCLES.has(v));
  if (unknown !== undefined)
    throw badRequest('invalid_value', `lifecycle: must be active, deprecated or retired (got ${JSON.stringify(unknown.slice(0, 100))}).`, 'lifecycle');
  const limit = limitOf(query.get('limit'));
  const after = query.get('after_id');
  const before = query.get('before_id');
  if (after !== null && before !== null) throw badRequest('invalid_value', 'Send after_id or before_id, not both.', 'before_id');
  // Every configured model is active: a filter without `active` leaves none.
  const listed = lifecycle.length > 0 && !lifecycle.includes('active') ? [] : models;
  if (after !== null) {
    const at = cursorIndex(listed, after, 'after_id', byId);
    return { items: listed.slice(at + 1, at + 1 + limit), hasMore: at + 1 + limit < listed.length };
  }
  if (before !== null) {
    const at = cursorIndex(listed, before, 'before_id', byId);
    const start = Math.max(0, at - limit);
    return { items: listed.slice(start, at), hasMore: start > 0 };
  }
  return { items: listed.slice(0, limit), hasMore: limit < listed.length };
}

function limitOf(text: string | null): number {
  if (text === null) return DEFAULT_LIMIT;
  const n = /^\d{1,7}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1 && n <= MAX_LIMIT))
    throw badRequest('invalid_value', `limit: must be an integer from 1 to ${MAX_LIMIT} (got ${JSON.stringify(text.slice(0, 100))}).`, 'limit');
  return n;
}

/** Where a cursor (a model id as first_id/last_id gave it, or an alias of one) is in the list. */
function cursorIndex(models: ModelConfig[], id: string, param: string, byId: Map<string, ModelConfig>): number {
  const model = byId.get(id);
  const at = model ? models.indexOf(model) : -1;
  if (at === -1)
    throw badRequest('invalid_value', `${param}: no model ${JSON.stringify(id.slice(0, 200))} is in this list; page with the first_id or last_id of a page.`, param);
  return at;
}

/**
 * GET /v1/models/{id}: the model an id or alias names, as listed (an alias answers with its
 * model, as the vendor's retrieve resolves its aliases), or the vendor's 404 for a model this
 * caller cannot use. `pathId` is as sent: percent-encoded (the SDKs encode `/` as %2F) or not.
 */
export function retrieveModel(catalog: ModelCatalog, auth: AuthInfo | undefined, format: WireFormat, pathId: string): { id: string; model: ModelConfig; body: object } {
  const decoded = decodedPathId(pathId);
  const id = catalog.byId.has(decoded) || !catalog.byId.has(pathId) ? decoded : pathId;
  const model = catalog.byId.get(id);
  if (!model) throw modelNotFound(format, `The model ${JSON.stringify(id.slice(0, 200))} does not exist. Use a model ID as listed by GET /v1/models.`);
  if (!isUsable(catalog, auth, model)) {
    const refusal = modelRefusal(auth, model.id);
    const capped = (catalog.offersByModel.get(model.id) ?? []).some((o) => !withinPriceCap(auth, o));
    throw modelNotFound(
      format,
      refusal ??
        (capped
          ? `No offer of model ${model.id} is within the account's price cap; raise the price cap in the routing settings or choose another model.`
          : `Model ${model.id} has no offers available.`),
    );
  }
  return { id, model, body: format === 'chat' ? chatItem(model) : messagesItem(model) };
}

function decodedPathId(pathId: string): string {
  try {
    return decodeURIComponent(pathId);
  } catch {
    return pathId; // a literal `%` sent unencoded
  }
}

/** Each vendor's 404 for an unknown model: OpenAI's `invalid_request_error` with code and param, Anthropic's `not_found_error`. */
const modelNotFound = (format: WireFormat, message: string) =>
  format === 'chat'
    ? new GatewayError(404, 'invalid_request_error', 'model_not_found', message, { param: 'model' })
    : new GatewayError(404, 'not_found_error', 'model_not_found', message);
