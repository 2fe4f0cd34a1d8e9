// The head a real vendor sends with every answer besides its body, as recorded from api.openai.com
// (chat completions, 27 headers) and api.anthropic.com (messages, 26) in late 2025: rate limits,
// organization, timings and the CDN's own. The simulator sends the same kinds, 26 headers in all with
// the ones Node adds (values fixed, only the request id varies), so that tests and the benchmark see
// a full vendor head: a gateway passes none of it on and should not pay for reading what it does not use.
import type { WireFormat } from '../config-types.js';

/** Both vendors send these. */
const BOTH = {
  'cf-cache-status': 'DYNAMIC',
  'cf-ray': '9b1f825efaa1eb81-FRA',
  server: 'cloudflare',
  'strict-transport-security': 'max-age=31536000; includeSubDomains; preload',
  'x-envoy-upstream-service-time': '412',
};

const CHAT: Record<string, string> = {
  ...BOTH,
  'access-control-expose-headers': 'X-Request-ID',
  'alt-svc': 'h3=":443"; ma=86400',
  'openai-organization': 'org-simulated',
  'openai-processing-ms': '398',
  'openai-project': 'proj_simulated',
  'openai-version': '2020-10-01',
  'set-cookie': '__cf_bm=simulated; path=/; expires=Thu, 01-Jan-2099 00:00:00 GMT; domain=.simulated.invalid; HttpOnly; Secure; SameSite=None',
  'x-content-type-options': 'nosniff',
  'x-openai-proxy-wasm': 'v0.1',
  'x-ratelimit-limit-requests': '5000',
  'x-ratelimit-limit-tokens': '4000000',
  'x-ratelimit-remaining-requests': '4999',
  'x-ratelimit-remaining-tokens': '3999993',
  'x-ratelimit-reset-requests': '12ms',
  'x-ratelimit-reset-tokens': '0s',
};

const MESSAGES: Record<string, string> = {
  ...BOTH,
  'anthropic-organization-id': '00000000-0000-4000-8000-000000000000',
  'anthropic-ratelimit-input-tokens-limit': '2000000',
  'anthropic-ratelimit-input-tokens-remaining': '2000000',
  'anthropic-ratelimit-input-tokens-reset': '2099-01-01T00:00:00Z',
  'anthropic-ratelimit-output-tokens-limit': '400000',
  'anthropic-ratelimit-output-tokens-remaining': '400000',
  'anthropic-ratelimit-output-tokens-reset': '2099-01-01T00:00:00Z',
  'anthropic-ratelimit-requests-limit': '4000',
  'anthropic-ratelimit-requests-remaining': '3999',
  'anthropic-ratelimit-requests-reset': '2099-01-01T00:00:00Z',
  'anthropic-ratelimit-tokens-limit': '2400000',
  'anthropic-ratelimit-tokens-remaining': '2400000',
  'anthropic-ratelimit-tokens-reset': '2099-01-01T00:00:00Z',
  via: '1.1 google',
  'x-robots-tag': 'none',
};

/** The vendor head of one answer in `format`, with its request id (OpenAI's x-request-id, Anthropic's request-id). */
export function vendorHeaders(format: WireFormat, requestId: string): Record<string, string> {
  return format === 'messages' ? { ...MESSAGES, 'request-id': requestId } : { ...CHAT, 'x-request-id': requestId };
}
