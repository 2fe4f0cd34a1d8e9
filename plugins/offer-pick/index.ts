// offer-pick: model ID (or an alias of one) → its usable offers, cheapest first for this request.
// Also sets the output budget and the input estimate (both needed by budget-hold) and answers
// GET /v1/models and GET /v1/models/{id}. Options the
// upstream bills beyond the offer's prices restrict the candidates to offers that declare them, and
// each attempt forwards only known or declared fields and allowed betas (extras.ts).
import type { Plugin, PluginEnv, UpstreamRequest } from '../../lib/plugin.js';
import type { Feature, Offer, RequestContext } from '../../lib/context.js';
import { GatewayError, badRequest, notFound, unavailable } from '../../lib/errors.js';
import { modelRefusal, usableOffers, withinPriceCap } from '../../lib/permissions.js';
import { estimateInput } from '../../lib/tokens.js';
import { clientToolTexts } from '../../lib/upstream-payload.js';
import { detectFeatures, FEATURE_NAMES, findMedia } from './features.js';
import { betaMatches, declares, parseBetas, requestExtras, type Allowance, type RequestExtras } from './extras.js';
import { listModels, retrieveModel, type ModelCatalog } from './models-list.js';
import { modelIndex } from './model-index.js';

/** Subscription-backed offers bill at least this many output tokens (spec section 8). */
export const SUBSCRIPTION_MIN_OUTPUT = 16;

/** The output budget the client set, or undefined when a chat client gave none. */
export function explicitOutputBudget(ctx: RequestContext): number | undefined {
  if (ctx.route === 'count_tokens') return 1;
  const b = ctx.body;
  return ctx.clientFormat === 'chat' ? (b.max_completion_tokens ?? b.max_tokens) : b.max_tokens;
}

/**
 * The output budget of a request on one offer, which its credit hold covers: the client's budget,
 * or without one `requested` (the default) within the offer's ceiling; at least the subscription
 * minimum on a subscription-backed offer.
 */
export function offerOutputBudget(o: Offer, requested: number, explicit: boolean): number {
  const budget = explicit ? requested : Math.min(requested, o.maxOutputTokens);
  return o.subscription ? Math.max(budget, SUBSCRIPTION_MIN_OUTPUT) : budget;
}

/** The request field that set the output budget, for errors' `param`. */
export const budgetParam = (ctx: RequestContext): string =>
  ctx.clientFormat === 'chat' && ctx.body.max_completion_tokens !== undefined ? 'max_completion_tokens' : 'max_tokens';

/** Estimated cost of the request on this offer (nano-USD; used only for ordering). */
const estimate = (o: Offer, input: number, output: number) => input * o.prices.input + output * o.prices.output;

/** ctx.state key of the request's extras, when it has any (see extras.ts). */
const EXTRAS = 'offer-pick';

export default function offerPick(env: PluginEnv): Plugin {
  const models = modelIndex(env.config.models);
  const catalog: ModelCatalog = { models: env.config.models, byId: models, offersByModel: env.offersByModel };
  const allowances = new Map<string, Allowance>(
    env.config.offers.map((o) => [o.listing, { fields: new Set(o.allow?.fields), tools: o.allow?.tools ?? [], betas: o.allow?.betas ?? [] }]),
  );
  const allowanceOf = (o: Offer): Allowance => allowances.get(o.listing) ?? NO_ALLOWANCE;
  return {
    name: 'offer-pick',
    bodyWork: true,
    onRequest(ctx: RequestContext) {
      if (ctx.route === 'models') {
        if (ctx.modelPath === undefined) {
          ctx.reply = { status: 200, body: listModels(catalog, ctx.auth, ctx.clientFormat, queryOf(ctx)) };
          return;
        }
        const found = retrieveModel(catalog, ctx.auth, ctx.clientFormat, ctx.modelPath);
        ctx.model = found.model;
        if (found.id !== found.model.id) ctx.requestedModel = found.id;
        ctx.reply = { status: 200, body: found.body };
        return;
      }
      const asked: string = ctx.body.model;
      const model = models.get(asked);
      if (!model)
        throw notFound('model_not_found', `Unknown model "${asked}". Use the exact model ID as listed by GET /v1/models.`);
      ctx.model = model;
      // From here on the model is named by its id: permissions, offers, history and the answer's `model`.
      const modelId = model.id;
      if (asked !== modelId) ctx.requestedModel = asked;
      const refusal = modelRefusal(ctx.auth, modelId);
      if (refusal) throw new GatewayError(403, 'permission_error', 'model_not_permitted', asked === modelId ? refusal : `"${asked}" is an alias of ${modelId}. ${refusal}`);
      const all = env.offersByModel.get(modelId) ?? [];
      const offers = usableOffers(ctx.auth, modelId, all);
      if (offers.length === 0) {
        const capped = all.some((o) => !withinPriceCap(ctx.auth, o));
        throw unavailable(
          'no_usable_offer',
          capped
            ? `No offer of model ${modelId} is within the account's price cap; raise the price cap in the routing settings or choose another model.`
            : `Model ${modelId} has no offers available.`,
          60,
        );
      }

      const media = findMedia(ctx.body);
      ctx.features = detectFeatures(ctx.body, ctx.clientFormat, media);
      const extras = requestExtras(ctx.body, ctx.clientFormat, clientBetas(ctx));
      if (extras.billable.length > 0 || extras.unknownFields.length > 0 || extras.gatewayFields.length > 0 || extras.neutralBetas.length > 0)
        ctx.state[EXTRAS] = extras;
      const explicit = explicitOutputBudget(ctx);
      // Without a budget a chat request gets the model's maximum output (spec 4.2), within each offer's ceiling.
      const requested = explicit ?? model.max_output_tokens;
      const seen = estimateInput(ctx.body, ctx.clientFormat, () => clientToolTexts(ctx));
      // A document the gateway cannot size may fill what the context window leaves: the hold assumes
      // it does (an inference request's input never exceeds that). A token count holds nothing.
      const input = seen.unseenDocuments > 0 && ctx.route !== 'count_tokens'
        ? Math.max(seen.tokens, model.context_window - requested)
        : seen.tokens;
      ctx.estimatedInputTokens = input;
      // The context rule is for inference requests: a token count produces no output.
      if (ctx.route !== 'count_tokens' && input + requested > model.context_window)
        throw badRequest(
          'context_window_exceeded',
          `The estimated input (${input} tokens) plus the output budget (${requested} tokens) exceeds the context window of ${modelId} (${model.context_window} tokens). Shorten the input or lower ${ctx.clientFormat === 'chat' ? 'max_completion_tokens / max_tokens' : 'max_tokens'}.`,
          budgetParam(ctx),
        );

      const capable = offers.filter((o) => missingFeature(o, ctx.features) === undefined);
      if (capable.length === 0) {
        const f = missingFeature(offers[0], ctx.features)!;
        const param = f === 'tools' ? 'tools' : f === 'documents' ? media.document! : f === 'images' ? media.image! : null;
        throw badRequest('feature_not_supported', `No offer of model ${modelId} supports ${FEATURE_NAMES[f]}; remove it from the request.`, param);
      }
      // A part the other format cannot express (a document by URL or file id) goes to same-format offers only.
      const bound = media.formatBound;
      const featureless = bound ? capable.filter((o) => o.provider.format === ctx.clientFormat) : capable;
      if (featureless.length === 0) {
        throw badRequest(
          'feature_not_supported',
          `No offer of model ${modelId} can take ${bound!.what} (${bound!.param}): its offers speak the ${ctx.clientFormat === 'chat' ? 'messages' : 'chat'} format, which cannot carry it; send the document's content as base64 data instead.`,
          bound!.param,
        );
      }
      // Whatever the upstream would bill beyond the offer's prices must be declared by the offer.
      const undeclared = (o: Offer) => extras.billable.find((e) => !declares(allowanceOf(o), e));
      const covered = extras.billable.length === 0 ? featureless : featureless.filter((o) => undeclared(o) === undefined);
      if (covered.length === 0) {
        const e = extras.billable.find((x) => featureless.every((o) => !declares(allowanceOf(o), x))) ?? undeclared(featureless[0])!;
        throw badRequest(
          'billable_option_not_offered',
          `No offer of model ${modelId} covers ${e.label}, which the upstream bills beyond the offer's prices; remove it from the ${e.kind === 'beta' ? 'anthropic-beta header' : 'request'}.`,
          e.param,
        );
      }
      const budgetFor = (o: Offer) => offerOutputBudget(o, requested, explicit !== undefined);
      const fitting = explicit === undefined ? covered : covered.filter((o) => o.maxOutputTokens >= requested);
      if (fitting.length === 0) {
        const most = Math.max(...covered.map((o) => o.maxOutputTokens));
        throw badRequest(
          'output_limit_exceeded',
          `The output budget of ${requested} tokens is above what any offer of ${modelId} allows (at most ${most}); lower ${ctx.clientFormat === 'chat' ? 'max_completion_tokens / max_tokens' : 'max_tokens'} to ${most} or less.`,
          budgetParam(ctx),
        );
      }
      ctx.outputBudget = Math.max(...fitting.map(budgetFor));
      ctx.candidates = fitting
        .map((o, i) => ({ o, i, cost: estimate(o, input, budgetFor(o)) }))
        .sort((a, b) => a.cost - b.cost || a.i - b.i)
        .map((x) => x.o);
    },

    onAttempt(ctx: RequestContext, up: UpstreamRequest) {
      const extras = ctx.state[EXTRAS] as RequestExtras | undefined;
      if (extras) forwardOnly(extras, allowanceOf(up.offer), ctx, up);
    },
  };
}

const NO_ALLOWANCE: Allowance = { fields: new Set(), tools: [], betas: [] };

/** The request's query parameters (GET /v1/models paging). */
const queryOf = (ctx: RequestContext): URLSearchParams => {
  const url = ctx.req.url ?? '';
  const q = url.indexOf('?');
  return new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
};

/**
 * The client's betas: forwarded per offer by onAttempt (the core never forwards the header as sent).
 * A chat client's are ignored (they mean nothing in its format).
 */
function clientBetas(ctx: RequestContext): string[] {
  const raw = ctx.req.headers?.['anthropic-beta'];
  return raw !== undefined && ctx.clientFormat === 'messages' ? parseBetas(raw) : [];
}

/**
 * Shape one attempt so that nothing forwarded is billed beyond the offer's prices: fields the
 * gateway does not know are dropped (unless the offer declares them; conversion drops them anyway),
 * the gateway's own fields always are, and a messages upstream gets the client's betas that its
 * provider lists or the offer declares.
 */
function forwardOnly(extras: RequestExtras, allow: Allowance, ctx: RequestContext, up: UpstreamRequest): void {
  if (up.format === ctx.clientFormat) {
    const drop = [...extras.gatewayFields, ...extras.unknownFields.filter((f) => !allow.fields.has(f))];
    if (drop.length > 0) {
      const body = { ...up.body };
      for (const f of drop) delete body[f];
      up.body = body;
    }
  }
  if (up.format !== 'messages') return;
  const listed = up.offer.provider.betas ?? [];
  const declared = (b: string) => allow.betas.some((f) => betaMatches(f, b));
  const betas = [
    ...extras.neutralBetas.filter((b) => declared(b) || listed.some((f) => betaMatches(f, b))),
    // A candidate declares every billable beta of the request.
    ...extras.billable.filter((e) => e.kind === 'beta').map((e) => e.name),
  ];
  if (betas.length > 0) up.headers['anthropic-beta'] = betas.join(',');
}

function missingFeature(o: Offer, used: Set<Feature>): Feature | undefined {
  for (const f of used) if (!o.supports[f]) return f;
  return undefined;
}
