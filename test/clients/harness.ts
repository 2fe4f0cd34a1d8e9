// The gateway every client of the matrix talks to: one model per upstream format, so each route has
// a same-format path and a converted one, plus the accounts and keys that draw the failure answers
// (401 a wrong key, 402 an account without enough credit, 429 a key over its requests per minute,
// 503 an upstream that fails).
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import type { Test } from 'tap';
import { parse as parseYaml } from 'yaml';
import type { ReceivedRequest } from '../../lib/simulator/index.js';
import { parseUsd } from '../../lib/store/money.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

/** Served only by a messages-format upstream. */
export const MESSAGES_MODEL = 'client/claude';
/** Served only by a chat-completions upstream. */
export const CHAT_MODEL = 'client/gpt';

export type Route = 'chat' | 'messages';

export interface Path {
  /** `same-format` or `converted`, as the matrix names the path. */
  name: 'same-format' | 'converted';
  model: string;
  /** The offer that serves it (`x-service-listing`). */
  listing: string;
  /** The upstream route the simulator must have been asked on. */
  upstreamPath: '/v1/messages' | '/v1/chat/completions';
}

/** The two paths of a route: its same-format model first, then the one served in the other format. */
export function pathsOf(route: Route): [Path, Path] {
  const messages: Path = { name: route === 'messages' ? 'same-format' : 'converted', model: MESSAGES_MODEL, listing: `${MESSAGES_MODEL}@sim-messages`, upstreamPath: '/v1/messages' };
  const chat: Path = { name: route === 'chat' ? 'same-format' : 'converted', model: CHAT_MODEL, listing: `${CHAT_MODEL}@sim-chat`, upstreamPath: '/v1/chat/completions' };
  return route === 'chat' ? [chat, messages] : [messages, chat];
}

/** Written into a prompt, it makes the simulated upstream answer with an error status (a failed offer). */
export const UPSTREAM_FAILS = '<<sim fault=status status=503>>';
/** Written into a prompt, it makes the simulated model call two of the request's tools at once. */
export const TWO_TOOL_CALLS = '<<sim tools=2>>';

export interface ClientGateway extends TestGateway {
  /** A well-formed key that is not the gateway's (the test key with its last characters changed): 401. */
  wrongKey: string;
  /** A key of an account whose credit cannot hold any request's output budget (402). */
  poorKey: string;
  /** A new key allowed one request per minute, that request already spent (429). */
  keyOverItsLimit(): Promise<string>;
  /** The requests the simulated upstreams received since `mark` (from `mark()`). */
  upstreamSince(mark: number): ReceivedRequest[];
  mark(): number;
}

export async function startClientGateway(): Promise<ClientGateway> {
  const gw = await startGateway({
    configure(cfg) {
      // A failing offer must not cool down: the next test asks the same offer for an answer.
      cfg.breaker = { failure_threshold: 1_000_000, cooldown_ms: 1000 };
      cfg.models = [
        { id: MESSAGES_MODEL, display_name: 'Client Claude', context_window: 200000, max_output_tokens: 8192 },
        { id: CHAT_MODEL, display_name: 'Client GPT', context_window: 128000, max_output_tokens: 8192 },
      ];
      cfg.offers = [
        { listing: `${MESSAGES_MODEL}@sim-messages`, model: MESSAGES_MODEL, provider: 'sim-messages', upstream_model: 'claude-up', price: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 } },
        { listing: `${CHAT_MODEL}@sim-chat`, model: CHAT_MODEL, provider: 'sim-chat', upstream_model: 'gpt-up', price: { input: 2.5, output: 10, cache_read: 1.25 } },
      ];
    },
  });
  // $0.0001 holds 10 output tokens at $10 per million: any real output budget is refused.
  const poor = await gw.store.accounts.create({ email: 'poor@example.com' });
  await gw.store.ledger.grant(poor.id, parseUsd('0.0001'), 'almost nothing');
  const { secret: poorKey } = await gw.store.keys.create({ accountId: poor.id, name: 'poor key' });
  return Object.assign(gw, {
    wrongKey: gw.apiKey.slice(0, -4) + (gw.apiKey.endsWith('aaaa') ? 'bbbb' : 'aaaa'),
    poorKey,
    async keyOverItsLimit() {
      const { secret } = await gw.store.keys.create({ accountId: gw.accountId, name: 'one a minute', rpm: 1 });
      // Requests count from the headers, so a body the gateway refuses spends the one allowed too.
      const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: '{}' });
      await res.arrayBuffer();
      return secret;
    },
    mark: () => gw.sim.received.length,
    upstreamSince: (mark: number) => gw.sim.received.slice(mark),
  });
}

/**
 * A gateway with the default config's providers, models and offers (config/gateway.yaml), as a new
 * user runs it, with the test account's key: what the README's settings are written for.
 */
export function startDefaultConfigGateway(): Promise<TestGateway> {
  const defaults = parseYaml(readFileSync(new URL('../../config/gateway.yaml', import.meta.url), 'utf8'));
  return startGateway({
    configure(cfg) {
      cfg.providers = defaults.providers;
      cfg.models = defaults.models;
      cfg.offers = defaults.offers;
    },
  });
}

/** Strip the query string: Claude Code and some SDKs add `?beta=true`. */
export const upstreamRoute = (r: ReceivedRequest) => r.path.split('?')[0];

/**
 * The bodies of the upstream requests made since `mark`, after checking there were `count` of them,
 * all on `route` (so a test knows which path served it).
 */
export function upstreamBodies(t: Test, gw: ClientGateway, mark: number, route: string, count = 1): any[] {
  const sent = gw.upstreamSince(mark);
  t.strictSame(sent.map(upstreamRoute), Array(count).fill(route), `${count} upstream request(s), on ${route}`);
  return sent.map((r) => r.body);
}

/** The schema every client's structured output is asked for and checked against. */
export const WEATHER_SCHEMA = {
  type: 'object',
  properties: {
    city: { type: 'string' },
    temperature_c: { type: 'number' },
    conditions: { type: 'string', enum: ['sunny', 'cloudy', 'rain'] },
    windy: { type: 'boolean' },
  },
  required: ['city', 'temperature_c', 'conditions', 'windy'],
  additionalProperties: false,
} as const;

const validateWeather = new Ajv({ strict: true }).compile(WEATHER_SCHEMA);

/** The errors of `value` against WEATHER_SCHEMA, or null when it validates. */
export function weatherSchemaErrors(value: unknown): string | null {
  return validateWeather(value) ? null : JSON.stringify(validateWeather.errors);
}

/** The two tools of the tool round trip, as JSON Schemas (each client wraps them its own way). */
export const TOOLS: Record<'get_weather' | 'get_time', { description: string; parameters: { type: 'object'; properties: Record<string, { type: 'string' }>; required: string[] } }> = {
  get_weather: { description: 'Current weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
  get_time: { description: 'Current time in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

/** What the client's tool code answers for a call. */
export const toolResult = (name: string) => (name === 'get_weather' ? 'Sunny, 21 C' : '12:00');

/**
 * A runner of at most `n` tasks at a time (a finished task hands its slot to the next): for client
 * processes started together, so a small machine runs them in turns instead of timing them out.
 */
export function takingTurns(n: number): <T>(task: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (task) => {
    if (running < n) running++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}

/** The error a promise rejects with (a resolved promise is a failure of the test: it throws). */
export async function rejection(p: PromiseLike<unknown>): Promise<any> {
  const outcome = await Promise.resolve(p).then(
    () => ({ ok: true as const }),
    (err: unknown) => ({ ok: false as const, err }),
  );
  if (outcome.ok) throw new Error('expected the request to fail, it succeeded');
  return outcome.err;
}
