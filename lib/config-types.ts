// Shapes of the operator config file (see config/gateway.schema.json, which validates them).
export type WireFormat = 'chat' | 'messages';

export interface ServerConfig {
  host: string;
  port: number;
  body_limit_bytes: number;
  /** All request bodies in memory together (being read or held by requests in flight). */
  max_buffered_bytes: number;
  headers_timeout_ms: number;
  request_timeout_ms: number;
  keep_alive_timeout_ms: number;
  shutdown_grace_ms: number;
}

export interface UpstreamConfig {
  /** No response headers within this → next offer. */
  first_byte_timeout_ms: number;
  /** No bytes for this long on a streaming or non-streaming body → the attempt fails. */
  idle_timeout_ms: number;
  /** A stream commits to its offer at its first output event, or after this long. */
  commit_timeout_ms: number;
  /** A request (a stream included) ends after this long in all; older holds are swept. */
  max_request_ms: number;
  max_sockets_per_provider: number;
}

export interface BreakerConfig {
  failure_threshold: number;
  cooldown_ms: number;
}

export interface ProviderConfig {
  id: string;
  format: WireFormat;
  /** messages: without /v1; chat: with /v1. Ignored when `simulated` is true. */
  base_url: string;
  /** How the dashboard names this provider's offers; without it, each offer's listing id. */
  display_name?: string;
  api_key?: string;
  http2?: boolean;
  /** Served by the in-process simulated provider (base_url is filled in at start). */
  simulated?: boolean;
  anthropic_version?: string;
  /**
   * messages providers: the client `anthropic-beta` values forwarded to this upstream, by family
   * (`prompt-caching` matches `prompt-caching-2024-07-31`); others are dropped. Filled in by the
   * config loader (the schema's default list).
   */
  betas?: string[];
}

export interface ModelConfig {
  id: string;
  /** Other ids clients may send for this model (e.g. a vendor's own ids); listed nowhere. */
  aliases?: string[];
  display_name?: string;
  context_window: number;
  max_output_tokens: number;
  created?: string;
}

export interface PriceConfig {
  input: number;
  output: number;
  cache_read?: number;
  /** 5-minute cache writes. */
  cache_write?: number;
  /** 1-hour cache writes; default: 2 × input (the vendor's rate), or cache_write if higher. */
  cache_write_1h?: number;
}

export interface SupportsConfig {
  tools: boolean;
  images: boolean;
  reasoning: boolean;
  json_schema: boolean;
  /** Document input: messages `document` blocks, chat `file` parts. */
  documents: boolean;
}

/** What an offer's prices cover beyond plain tokens: billable request options it may serve. */
export interface AllowConfig {
  /** Top-level request fields (billable ones, or ones the gateway does not know, which are otherwise dropped). */
  fields?: string[];
  /** Server tool types, with or without their date (`web_search` covers `web_search_20250305`). */
  tools?: string[];
  /** Betas by family, billable ones included (`context-1m` covers `context-1m-2025-08-07`); forwarded to this offer. */
  betas?: string[];
}

export interface OfferConfig {
  listing: string;
  model: string;
  provider: string;
  upstream_model: string;
  price: PriceConfig;
  max_output_tokens?: number;
  subscription?: boolean;
  supports?: Partial<SupportsConfig>;
  allow?: AllowConfig;
}

/** Per API key defaults; a key's own limits (rpm, tpm on the key) win. */
export interface RateLimitsConfig {
  requests_per_minute: number;
  tokens_per_minute: number;
}

export interface DemoConfig {
  /** On an empty database, create a demo account with credit and print a one-time key. */
  enabled: boolean;
  email: string;
  credit_usd: number;
}

export interface DashboardConfig {
  /** Serve the account owners' web UI under /dashboard. */
  enabled: boolean;
  /** open: anyone may create an account on the sign-up page; closed: operators create them. */
  signup: 'open' | 'closed';
  session_ttl_hours: number;
  /** Mark cookies Secure even without `X-Forwarded-Proto: https` (TLS ends in front of the gateway). */
  secure_cookies: boolean;
  /** Take the client address from X-Forwarded-For (login rate limits); only behind a proxy that sets it. */
  trust_proxy: boolean;
  /** The address people reach the dashboard at, for payment return links; default: from the request. */
  public_url?: string;
}

export interface StripeConfig {
  secret_key: string;
  webhook_secret: string;
  /** The top-up amounts offered, in USD. */
  amounts_usd: number[];
  /** Offer stablecoin payments (Stripe's crypto payment method) besides cards. */
  stablecoin: boolean;
  /** Another address for Stripe's API (stripe-mock, a test double); default: Stripe's own. */
  api_base?: string;
}

/** Prometheus metrics on a listener of its own; absent in GatewayConfig: off. */
export interface MetricsConfig {
  host: string;
  port: number;
  /** Label request counts with the API key's id (off: key ids never reach a label). */
  key_labels: boolean;
}

export interface LogConfig {
  level: 'debug' | 'info' | 'warn' | 'error';
  /** Absent: pretty on a terminal, json otherwise. */
  format?: 'json' | 'pretty';
  /** One line per API request on stdout. */
  requests: boolean;
}

export interface TracingConfig {
  /** OTLP/HTTP base address; spans go to {otlp_endpoint}/v1/traces. */
  otlp_endpoint: string;
  service_name: string;
}

export interface GatewayConfig {
  server: ServerConfig;
  /** Exactly one of sqlite (the default, ./data/gateway.db) and postgres is set once the config is parsed. */
  /** node_dead_after_ms: PostgreSQL nodes' failure bound (heartbeat a tenth of it, sweep a fifth). */
  storage: { sqlite?: string; postgres?: string; commit_interval_ms: number; node_dead_after_ms: number };
  /** Request history older than retention_days is deleted in the background. */
  history: { retention_days: number };
  log: LogConfig;
  /** Absent: tracing is off. */
  tracing?: TracingConfig;
  upstream: UpstreamConfig;
  breaker: BreakerConfig;
  plugins: string[];
  rate_limits: RateLimitsConfig;
  demo: DemoConfig;
  dashboard: DashboardConfig;
  /** Card and stablecoin top-ups; absent: payments are not enabled. */
  stripe?: StripeConfig;
  /** Prometheus metrics; absent: off. */
  metrics?: MetricsConfig;
  providers: ProviderConfig[];
  models: ModelConfig[];
  offers: OfferConfig[];
  /** Where the config came from (for SIGHUP reload and messages). */
  source?: string;
}
