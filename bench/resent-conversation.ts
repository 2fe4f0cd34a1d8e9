// The input estimate of a conversation the gateway has seen before, the common case of agents and
// chat clients (each turn resends the whole history and the same tools), timed in-process: each
// turn's body is parsed fresh, as a request's is, and its texts and tools are found among the
// remembered counts. JSON.parse of the same body is the yardstick. `node dist/bench/resent-conversation.js` prints it; the main bench too.
import { hrtime } from 'node:process';
import { estimateInput } from '../lib/tokens.js';
import { clientToolTexts } from '../lib/upstream-payload.js';

const MESSAGES = 40;
const CHARS_PER_MESSAGE = 2500;
const TOOLS = 20;
const WORDS = 'the gateway holds credit before it forwards each request and charges what the upstream reports'.split(' ');

export interface ResentFigures {
  bytes: number;
  /** Medians over the rounds, µs per body. */
  parseUs: number;
  estimateUs: number;
}

const words = (chars: number, from: number) => {
  let text = '';
  for (let i = from; text.length < chars; i++) text += `${WORDS[(i * 7919) % WORDS.length]} `;
  return text;
};

/** Tools as agents define them: a description and a schema of a dozen described parameters (about 3 KB each). */
function tool(t: number) {
  const properties: Record<string, unknown> = {};
  for (let p = 0; p < 12; p++) properties[`param_${p}`] = { type: 'string', description: words(150 + 10 * t, t * 12 + p) };
  return { name: `tool_${t}`, description: words(400, t), input_schema: { type: 'object', properties, required: ['param_0'] } };
}

function conversation(): string {
  const messages = [];
  for (let m = 0; m < MESSAGES; m++) messages.push({ role: m % 2 ? 'assistant' : 'user', content: words(CHARS_PER_MESSAGE, m) });
  const tools = Array.from({ length: TOOLS }, (_, t) => tool(t));
  return JSON.stringify({ model: 'm', max_tokens: 100, tools, messages });
}

export function measureResentConversation(rounds = 5, perRound = 500): ResentFigures {
  const body = conversation();
  estimateInput(JSON.parse(body), 'messages', () => clientToolTexts({ bodyText: body })); // the first turn counts and remembers
  const parse: number[] = [];
  const estimate: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const bodies = [];
    let t0 = hrtime.bigint();
    for (let i = 0; i < perRound; i++) bodies.push(JSON.parse(body));
    parse.push(Number(hrtime.bigint() - t0) / perRound / 1000);
    t0 = hrtime.bigint();
    for (const b of bodies) estimateInput(b, 'messages', () => clientToolTexts({ bodyText: body })); // a request's scan and estimate
    estimate.push(Number(hrtime.bigint() - t0) / perRound / 1000);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return { bytes: Buffer.byteLength(body), parseUs: median(parse), estimateUs: median(estimate) };
}

export function resentConversationReport(f: ResentFigures): string {
  return `Input estimate of a conversation resent (${(f.bytes / 1000).toFixed(0)} KB: ${MESSAGES} messages, ${TOOLS} tools, their counts remembered; in-process): ` +
    `${f.estimateUs.toFixed(1)} µs per request (JSON.parse of the body: ${f.parseUs.toFixed(1)} µs)`;
}

if (import.meta.url === `file://${process.argv[1]}`) process.stdout.write(`${resentConversationReport(measureResentConversation())}\n`);
