// Per-request state shared by the core and the plugins.
import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { GatewayError } from './errors.js';
import type { Member } from './json-scan.js';
import { headFor, type HeadList } from './reply.js';
import type { ModelConfig, ProviderConfig, SupportsConfig, WireFormat } from './config-types.js';

export type Route = 'chat' | 'messages' | 'count_tokens' | 'models';

/** Prices in nano-USD (1e-9 USD) per token: exact integers. */
export interface UnitPrices {
  input: number;
  output: number;
  cacheRead: number;
  /** 5-minute cache writes. */
  cacheWrite: number;
  /** 1-hour cache writes (the vendor bills them at 2× input). */
  cacheWrite1h: number;
}

export interface Provider extends ProviderConfig {
  /** Resolved base URL (the simulator's address for simulated providers). */
  url: URL;
}

/** An offer as the running gateway sees it: config resolved and prices in integers. */
export interface Offer {
  listing: string;
  model: ModelConfig;
  provider: Provider;
  upstreamModel: string;
  prices: UnitPrices;
  /** The lower of the offer's and the model's output ceiling. */
  maxOutputTokens: number;
  subscription: boolean;
  supports: SupportsConfig;
}

export type Feature = keyof SupportsConfig;

/** Token counts in the messages format's sense: `input` excludes cache reads and writes. */
export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  /** All cache writes (the messages format's cache_creation_input_tokens), 1-hour ones included. */
  cacheWrite: number;
  /** Of `cacheWrite`, the 1-hour writes (priced at cacheWrite1h; the rest at cacheWrite). */
  cacheWrite1h: number;
}

export type AttemptOutcome = 'ok' | 'failed' | 'skipped';

export interface Attempt {
  listing: string;
  outcome: AttemptOutcome;
  status?: number;
  /** Short reason, e.g. "connect ECONNREFUSED", "upstream 503", "error event before output". */
  reason?: string;
  durationMs: number;
}

export type Outcome = 'ok' | 'error' | 'client_gone';

/** Who is calling and what they may use (set by the auth plugin). */
export interface AuthInfo {
  accountId: number;
  keyId: number;
  /** The key's allowed-model list; null = any. */
  keyAllowedModels: string[] | null;
  monthlyLimitNano: number | null;
  /** The key's own rate limits; null or absent = the config's rate_limits defaults. */
  rpm?: number | null;
  tpm?: number | null;
  /** The account's routing settings. */
  routing: RoutingSettings;
}

export interface RoutingSettings {
  /** Allowed models; null = any. */
  allow: string[] | null;
  deny: string[];
  /** Price caps in nano-USD per token (same unit as UnitPrices); null = no cap. */
  priceCapInput: number | null;
  priceCapOutput: number | null;
}

/** A complete answer produced by a plugin instead of an upstream call (models list, local token count). */
export interface Reply {
  status: number;
  body: unknown;
}

export interface RequestContext {
  readonly id: string;
  readonly route: Route;
  /** The wire format the client speaks (models: chosen by the version header). */
  readonly clientFormat: WireFormat;
  readonly req: IncomingMessage;
  /** Date.now() at arrival. */
  readonly receivedAt: number;
  /** performance.now() at arrival. */
  readonly startedAt: number;
  /** Says when the client went away before the response ended. */
  readonly client: ClientLink;

  /** The body's bytes as read; emptied once schema-check has parsed them (bodyText keeps the text). */
  rawBody: Buffer;
  /**
   * The parsed JSON body (set by schema-check; parsed once). Read-only to hooks, neither replaced nor
   * changed in place: it stays JSON.parse(bodyText), which the estimator (tools) and the upstream
   * payload rely on. An attempt replaces values in its own up.body instead.
   */
  body: Record<string, any>;
  /** The text `body` was parsed from (schema-check sets both): its values are sent upstream as the client wrote them (upstream-payload.ts). */
  bodyText?: string;
  /** Where bodyText's top-level members are, found once a request (clientMembers in upstream-payload.ts); null: not an object. */
  bodyMembers?: Map<string, Member> | null;
  stream: boolean;

  model?: ModelConfig;
  /** The model id the client sent when it is an alias of `model` (config models[].aliases). */
  requestedModel?: string;
  /** GET /v1/models/{id}: the id as it appears in the path (percent-encoded or not). */
  readonly modelPath?: string;
  /** Usable offers, cheapest first for this request (set by offer-pick, narrowed by later plugins). */
  candidates: Offer[];
  features: Set<Feature>;
  estimatedInputTokens: number;
  /** Output tokens the request may produce (after defaults and subscription minimum). */
  outputBudget: number;

  auth?: AuthInfo;
  attempts: Attempt[];
  /** The offer that served (committed) the response. */
  offer?: Offer;
  /** Usage as charged (set by metering). */
  usage?: Usage;
  /** Nano-USD charged for the request (set by metering once its hold ended). */
  chargedNano?: number;
  /** The request's trace id, when tracing is on (for the request log line). */
  traceId?: string;
  /** Final HTTP status sent to the client. */
  status?: number;
  error?: GatewayError;
  /** performance.now() when the first response byte was written. */
  firstByteAt?: number;
  /** Set by a plugin to answer without an upstream call; the core sends it after the request hooks. */
  reply?: Reply;
  /** Per-plugin scratch space, keyed by plugin name. */
  state: Record<string, unknown>;
  /** Headers plugins add to every answer of this request, errors included (e.g. rate-limit state). */
  responseHeaders?: Record<string, string | number>;
  /** The answer's headers gathered so far (its request id first), written with its head (reply.ts). */
  head: HeadList;
}

/**
 * Whether the client went away before its response ended, and the one party to tell (the upstream
 * attempt in progress). Does the job of an AbortSignal at a fraction of its cost per request.
 */
export class ClientLink {
  gone = false;
  private listener: (() => void) | undefined;

  /** The server saw the client's connection close early. Idempotent. */
  markGone(): void {
    if (this.gone) return;
    this.gone = true;
    const fn = this.listener;
    this.listener = undefined;
    fn?.();
  }

  /** Call `fn` when the client goes; `undefined` stops listening. One listener at a time. */
  onGone(fn: (() => void) | undefined): void {
    this.listener = fn;
  }
}

/** What identifies a new request; everything else starts empty. */
export type ContextInit = Pick<RequestContext, 'id' | 'route' | 'clientFormat' | 'req'> & Partial<RequestContext>;

/** A fresh context: the one place that lists every field's starting value. */
export function createContext(init: ContextInit): RequestContext {
  return {
    receivedAt: Date.now(),
    startedAt: performance.now(),
    client: init.client ?? new ClientLink(),
    rawBody: EMPTY_BODY,
    body: {},
    stream: false,
    candidates: [],
    features: new Set(),
    estimatedInputTokens: 0,
    outputBudget: 0,
    attempts: [],
    state: {},
    head: headFor(init.id),
    ...init,
  };
}

export const EMPTY_BODY = Buffer.alloc(0);

/** Longest client-sent model name a history row, log line or span repeats (nothing else bounds what a client sends). */
const MAX_MODEL_CHARS = 200;

/** The model's id (an alias resolved), else what the client sent, cut to MAX_MODEL_CHARS; null without one. */
export function modelOf(ctx: RequestContext): string | null {
  if (ctx.model) return ctx.model.id;
  const sent = ctx.body.model;
  if (typeof sent !== 'string') return null;
  return sent.length > MAX_MODEL_CHARS ? sent.slice(0, MAX_MODEL_CHARS) + '…' : sent;
}
