// What the bench sends: typical ~2 KB requests in either client format, and the scenarios that pair a
// client format with the upstream format the generated config makes cheapest for its model.
import type { WireFormat } from '../lib/config-types.js';
import type { Target } from './load.js';

export interface Scenario {
  id: string;
  title: string;
  client: WireFormat;
  upstream: WireFormat;
  stream: boolean;
  /** The marketplace model the client asks for (see setup.ts: its cheapest offer speaks `upstream`). */
  model: string;
  /** The offer the gateway must serve it with (checked on a sample answer). */
  listing: string;
}

/** Each model's cheapest offer speaks the format in its name. */
export const MODEL_BY_UPSTREAM: Record<WireFormat, string> = { chat: 'bench/chat-native', messages: 'bench/messages-native' };
export const PROVIDER_BY_FORMAT: Record<WireFormat, string> = { chat: 'bench-chat', messages: 'bench-messages' };

function scenario(client: WireFormat, upstream: WireFormat, stream: boolean): Scenario {
  const kind = client === upstream ? 'passthrough' : 'converted';
  return {
    id: `${client}-${upstream}-${stream ? 'stream' : 'json'}`,
    title: `${client} client → ${upstream} upstream, ${stream ? '20-chunk stream' : 'non-stream'} (${kind})`,
    client,
    upstream,
    stream,
    model: MODEL_BY_UPSTREAM[upstream],
    listing: `${MODEL_BY_UPSTREAM[upstream]}@${PROVIDER_BY_FORMAT[upstream]}`,
  };
}

export const scenarios: Scenario[] = [
  scenario('chat', 'chat', false),
  scenario('chat', 'chat', true),
  scenario('messages', 'messages', true),
  scenario('chat', 'messages', false),
  scenario('chat', 'messages', true),
  scenario('messages', 'chat', false),
  scenario('messages', 'chat', true),
];

/** Pairs of (converted stream, passthrough stream) with the same client format. */
export const streamPairs: [converted: string, passthrough: string][] = [
  ['chat-messages-stream', 'chat-chat-stream'],
  ['messages-chat-stream', 'messages-messages-stream'],
];

/** The simulator answers 20 words; streams come in 20 chunks. */
const DIRECTIVE = '<<sim words=20 chunks=20>>';

const SYSTEM =
  'You are a careful assistant for an online hardware store. Answer in plain English, keep answers short, ' +
  'cite the product page when you quote a specification, and never invent stock levels or prices. ' +
  'If the customer asks about an order, ask for the order number first. Prefer metric units, and give ' +
  'imperial units in brackets when the customer used them. Escalate refunds above 200 EUR to a human. ' +
  'Electrical work: say when a qualified electrician is required by regulations, and never give wiring ' +
  'instructions for mains circuits in wet rooms. Delivery takes two to four working days; collection ' +
  'from a store is free and usually ready within two hours of the order. Keep a friendly, plain tone, ' +
  'and end with one short question when the customer has to choose between options.';

const TURNS: { role: 'user' | 'assistant'; content: string }[] = [
  {
    role: 'user',
    content:
      'Hello! I am renovating a small bathroom (about 2.1 by 1.6 metres) and I need an extractor fan. The room ' +
      'has no window, the ceiling is 2.4 metres high and the duct run to the outside wall is roughly 3 metres ' +
      'with one bend. Which of your fans would you recommend, and do I need a timer or humidity sensor?',
  },
  {
    role: 'assistant',
    content:
      'For a windowless bathroom of about 8 cubic metres, building guidance asks for at least 15 litres per ' +
      'second of extraction. With a 3 metre duct and one bend you lose some flow, so pick a fan rated near 25 ' +
      'litres per second. A humidity sensor with an overrun timer is worth it in a room without a window: it ' +
      'keeps running after a shower until the air is dry. Would you like a ceiling or an inline model?',
  },
  {
    role: 'user',
    content:
      'An inline model sounds better because the ceiling space is easy to reach from the loft. How loud are ' +
      'they usually, and can I wire it to the existing light switch so it starts with the light? Also, what ' +
      `diameter of ducting should I buy, 100 or 125 millimetres? ${DIRECTIVE}`,
  },
];

/** ~2 KB, the same conversation in either format. */
export function requestBody(format: WireFormat, model: string, stream: boolean): Buffer {
  const body: Record<string, unknown> =
    format === 'chat'
      ? { model, max_tokens: 256, temperature: 0.7, messages: [{ role: 'system', content: SYSTEM }, ...TURNS] }
      : { model, max_tokens: 256, temperature: 0.7, system: SYSTEM, messages: TURNS };
  if (stream) {
    body.stream = true;
    if (format === 'chat') body.stream_options = { include_usage: true };
  }
  return Buffer.from(JSON.stringify(body));
}

const PATH: Record<WireFormat, string> = { chat: '/v1/chat/completions', messages: '/v1/messages' };

/** The scenario's client request to a server on `port`, with `apiKey` as the client's credential. */
export function requestTarget(s: Scenario, port: number, apiKey: string): Target {
  const body = requestBody(s.client, s.model, s.stream);
  const headers: Target['headers'] = {
    'content-type': 'application/json',
    'content-length': body.length,
    authorization: `Bearer ${apiKey}`,
  };
  if (s.client === 'messages') headers['anthropic-version'] = '2023-06-01';
  return { port, path: PATH[s.client], headers, body };
}

/** Why a sample answer is not the scenario's answer in the client's format, or undefined when it is. */
export function checkSample(s: Scenario, body: string): string | undefined {
  if (s.stream) {
    const end = s.client === 'chat' ? 'data: [DONE]' : 'event: message_stop';
    const text = s.client === 'chat' ? '"delta":{' : '"text_delta"';
    if (!body.includes(end)) return `the stream does not end with ${end}`;
    if (!body.includes(text)) return `the stream carries no ${text} events`;
    return undefined;
  }
  let answer: any;
  try {
    answer = JSON.parse(body);
  } catch {
    return 'the answer is not JSON';
  }
  const text = s.client === 'chat' ? answer?.choices?.[0]?.message?.content : answer?.content?.[0]?.text;
  return typeof text === 'string' && text.length > 0 ? undefined : `not a ${s.client}-format answer with text`;
}
