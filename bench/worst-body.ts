// The costliest bodies the request limits allow, timed in-process on the event loop's path: the real
// schema-check plugin (JSON.parse, count limits, schema validation) and the input-token estimate,
// each body fresh (no tokenizer cache hits), just under the 10 MB body limit. `node
// dist/bench/worst-body.js` prints the figures; the main bench prints them too.
import type { IncomingMessage } from 'node:http';
import { hrtime } from 'node:process';
import { createContext } from '../lib/context.js';
import type { PluginEnv } from '../lib/plugin.js';
import { estimateInputTokens } from '../lib/tokens.js';
import schemaCheck, { MAX_CONTENT_PARTS, MAX_JSON_VALUES, MAX_MESSAGES, MAX_TOOLS } from '../plugins/schema-check/index.js';

const BODY_LIMIT = 10 * 1024 * 1024;

/** Text BPE is slowest on (random letters in short words defeat its caches) or that it gives most tokens per byte. */
function adversarial(chars: number, seed: number): string {
  let x = seed * 2654435761 || 1;
  const bytes = Buffer.allocUnsafe(chars);
  for (let i = 0; i < chars; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bytes[i] = i % 8 === 7 ? 32 : 97 + ((x >>> 0) % 26);
  }
  return bytes.toString('latin1'); // one flat string: building the body leaves little garbage to time
}

export interface WorstBody {
  name: string;
  build: (seed: number) => Buffer;
}

const tools = (seed: number, description: number) =>
  Array.from({ length: MAX_TOOLS }, (_, i) => ({ name: `t${i}`, description: adversarial(description, seed + i), input_schema: { type: 'object' } }));

/** Fills `budget` bytes with `count` texts of equal length (JSON escaping adds nothing for this alphabet). */
const textLength = (budget: number, count: number) => Math.floor(budget / count) - 40;

export const worstBodies: WorstBody[] = [
  {
    name: `${MAX_TOOLS} tools + ${MAX_CONTENT_PARTS} text parts, ~10 MB of adversarial text`,
    build: (seed) => {
      const text = textLength(BODY_LIMIT - 600_000, MAX_CONTENT_PARTS);
      const content = Array.from({ length: MAX_CONTENT_PARTS }, (_, i) => ({ type: 'text', text: adversarial(text, seed * 1e6 + i) }));
      return Buffer.from(JSON.stringify({ model: 'm', max_tokens: 10, tools: tools(seed, 1000), messages: [{ role: 'user', content }] }));
    },
  },
  {
    name: `${MAX_MESSAGES} messages, ~10 MB of adversarial text`,
    build: (seed) => {
      const text = textLength(BODY_LIMIT - 100_000, MAX_MESSAGES);
      const messages = Array.from({ length: MAX_MESSAGES }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: adversarial(text, seed * 1e6 + i) }));
      return Buffer.from(JSON.stringify({ model: 'm', max_tokens: 10, messages }));
    },
  },
  {
    name: '164 text parts of 60 KB (the reported attack)',
    build: (seed) => {
      const content = Array.from({ length: 164 }, (_, i) => ({ type: 'text', text: adversarial(60_000, seed * 1e6 + i) }));
      return Buffer.from(JSON.stringify({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content }] }));
    },
  },
  {
    name: `one tool whose schema has ${MAX_JSON_VALUES} tiny values (the value limit)`,
    build: (seed) => {
      const properties: Record<string, unknown> = {};
      // Each property counts twice (its object and the comma before the next).
      for (let i = 0; i < MAX_JSON_VALUES / 2 - 10; i++) properties[`p${seed}_${i}`] = { type: 'integer' };
      return Buffer.from(JSON.stringify({ model: 'm', max_tokens: 10, tools: [{ name: 't', input_schema: { type: 'object', properties } }], messages: [{ role: 'user', content: 'hi' }] }));
    },
  },
];

export interface WorstBodyFigures {
  name: string;
  bytes: number;
  /** Medians over the runs, in ms of event-loop time. */
  schemaCheckMs: number;
  parseMs: number;
  estimateMs: number;
  totalMs: number;
}

const ms = (from: bigint) => Number(hrtime.bigint() - from) / 1e6;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export function measureWorstBodies(runs: number): WorstBodyFigures[] {
  const plugin = schemaCheck({ config: {}, offersByModel: new Map() } as unknown as PluginEnv);
  const req = { headers: { 'content-type': 'application/json' } } as unknown as IncomingMessage;
  return worstBodies.map((w) => {
    const times = { schemaCheck: [] as number[], parse: [] as number[], estimate: [] as number[], total: [] as number[] };
    let bytes = 0;
    for (let run = 0; run <= runs; run++) {
      const rawBody = w.build(run + 1); // fresh text each run: no cache hits
      bytes = rawBody.length;
      if (bytes > BODY_LIMIT) throw new Error(`${w.name}: ${bytes} bytes, over the body limit`);
      const ctx = createContext({ id: 'w', route: 'messages', clientFormat: 'messages', req, rawBody });
      let t0 = hrtime.bigint();
      JSON.parse(rawBody.toString('utf8'));
      const parse = ms(t0);
      t0 = hrtime.bigint();
      plugin.onRequest!(ctx);
      const check = ms(t0);
      t0 = hrtime.bigint();
      estimateInputTokens(ctx.body, 'messages');
      const estimate = ms(t0);
      if (run === 0) continue; // warm-up
      times.parse.push(parse);
      times.schemaCheck.push(check);
      times.estimate.push(estimate);
      times.total.push(check + estimate);
    }
    return { name: w.name, bytes, schemaCheckMs: median(times.schemaCheck), parseMs: median(times.parse), estimateMs: median(times.estimate), totalMs: median(times.total) };
  });
}

export function worstBodyReport(figures: WorstBodyFigures[]): string {
  return figures
    .map((f) => `  ${f.name} (${(f.bytes / 1e6).toFixed(1)} MB): ${f.totalMs.toFixed(1)} ms = schema-check ${f.schemaCheckMs.toFixed(1)} (of which JSON.parse about ${f.parseMs.toFixed(1)}) + estimate ${f.estimateMs.toFixed(1)}`)
    .join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`Worst bodies the limits allow (in-process, median of 5):\n${worstBodyReport(measureWorstBodies(5))}\n`);
}
