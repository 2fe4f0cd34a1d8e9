// The input estimate of a conversation the gateway has seen before, the common case of agents and
// chat clients (each turn resends the whole history), timed in-process: each turn's body is parsed
// fresh, as a request's is, and its texts are found among the remembered counts. JSON.parse of the
// same body is the yardstick. `node dist/bench/resent-conversation.js` prints it; the main bench too.
import { hrtime } from 'node:process';
import { estimateInputTokens } from '../lib/tokens.js';

const MESSAGES = 40;
const CHARS_PER_MESSAGE = 2500;
const WORDS = 'the gateway holds credit before it forwards each request and charges what the upstream reports'.split(' ');

export interface ResentFigures {
  bytes: number;
  /** Medians over the rounds, µs per body. */
  parseUs: number;
  estimateUs: number;
}

function conversation(): string {
  const messages = [];
  for (let m = 0; m < MESSAGES; m++) {
    let text = '';
    for (let i = m; text.length < CHARS_PER_MESSAGE; i++) text += `${WORDS[(i * 7919) % WORDS.length]} `;
    messages.push({ role: m % 2 ? 'assistant' : 'user', content: text });
  }
  return JSON.stringify({ model: 'm', max_tokens: 100, messages });
}

export function measureResentConversation(rounds = 5, perRound = 500): ResentFigures {
  const body = conversation();
  estimateInputTokens(JSON.parse(body), 'messages'); // the first turn counts and remembers
  const parse: number[] = [];
  const estimate: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const bodies = [];
    let t0 = hrtime.bigint();
    for (let i = 0; i < perRound; i++) bodies.push(JSON.parse(body));
    parse.push(Number(hrtime.bigint() - t0) / perRound / 1000);
    t0 = hrtime.bigint();
    for (const b of bodies) estimateInputTokens(b, 'messages');
    estimate.push(Number(hrtime.bigint() - t0) / perRound / 1000);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return { bytes: Buffer.byteLength(body), parseUs: median(parse), estimateUs: median(estimate) };
}

export function resentConversationReport(f: ResentFigures): string {
  return `Input estimate of a conversation resent (${(f.bytes / 1000).toFixed(0)} KB, ${MESSAGES} messages, their counts remembered; in-process): ` +
    `${f.estimateUs.toFixed(1)} µs per request (JSON.parse of the body: ${f.parseUs.toFixed(1)} µs)`;
}

if (import.meta.url === `file://${process.argv[1]}`) process.stdout.write(`${resentConversationReport(measureResentConversation())}\n`);
