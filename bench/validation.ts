// The cost of request validation, timed in-process: schema-check's body validator on a typical
// ~2 KB body next to JSON.parse of the same body (which the gateway does once in any case).
import { hrtime } from 'node:process';
import type { WireFormat } from '../lib/config-types.js';
import { createBodyValidator } from '../plugins/schema-check/index.js';
import { requestBody } from './scenarios.js';

export interface ValidationFigures {
  route: WireFormat;
  bodyBytes: number;
  parseUs: number;
  validateUs: number;
}

/** ns per call of `fn`, over at least `ms` milliseconds after a warm-up. */
function timePerCall(fn: () => unknown, ms: number): number {
  let sink = 0;
  for (let i = 0; i < 5000; i++) sink += fn() ? 1 : 0;
  const start = hrtime.bigint();
  const until = start + BigInt(ms * 1e6);
  let calls = 0;
  let now = start;
  while (now < until) {
    for (let i = 0; i < 1000; i++) sink += fn() ? 1 : 0;
    calls += 1000;
    now = hrtime.bigint();
  }
  if (sink < 0) throw new Error('unreachable: keeps the calls from being optimized away');
  return Number(now - start) / calls;
}

export function measureValidation(ms: number): ValidationFigures[] {
  const validate = createBodyValidator();
  return (['chat', 'messages'] as const).map((route) => {
    const raw = requestBody(route, 'bench/model', true);
    const body = JSON.parse(raw.toString('utf8'));
    const problems = validate(route, body);
    if (problems.length > 0) throw new Error(`the bench's ${route} body is invalid: ${JSON.stringify(problems)}`);
    return {
      route,
      bodyBytes: raw.length,
      parseUs: timePerCall(() => JSON.parse(raw.toString('utf8')), ms) / 1000,
      validateUs: timePerCall(() => validate(route, body).length === 0, ms) / 1000,
    };
  });
}
