// The request line written out directly (requestLineJson) against the object JSON.stringify would
// write (requestLine): the same text, byte for byte, whatever the context holds.
import t from 'tap';
import { performance } from 'node:perf_hooks';
import type { IncomingMessage } from 'node:http';
import { isoNow, requestLine, requestLineJson } from '../../lib/request-log.js';
import { createContext, type RequestContext } from '../../lib/context.js';
import { GatewayError } from '../../lib/errors.js';

// Both read the clock: hold it still so that the two calls see the same time.
const realNow = performance.now;
const realDateNow = Date.now;
t.before(() => {
  performance.now = () => 1234.5678;
  Date.now = () => 1_790_000_000_123;
});
t.teardown(() => {
  performance.now = realNow;
  Date.now = realDateNow;
});

const base = () => createContext({ id: 'req_1', route: 'chat', clientFormat: 'chat', req: {} as IncomingMessage, startedAt: 1000.001 });

const cases: Record<string, (ctx: RequestContext) => void> = {
  'an empty context (unauthenticated, no model)': () => {},
  'a served stream with usage and two attempts': (ctx) => {
    ctx.auth = { accountId: 17, keyId: 4 } as unknown as RequestContext['auth'];
    ctx.body = { model: 'test/gpt' };
    ctx.stream = true;
    ctx.offer = { listing: 'test/gpt@sim' } as RequestContext['offer'];
    ctx.attempts.push({ listing: 'test/gpt@a', outcome: 'failed', reason: 'upstream 503', status: 503, durationMs: 1.23456 });
    ctx.attempts.push({ listing: 'test/gpt@sim', outcome: 'ok', durationMs: 0.1 + 0.2 });
    ctx.usage = { input: 12, output: 340, cacheRead: 5, cacheWrite: 7, cacheWrite1h: 1 } as RequestContext['usage'];
    ctx.chargedNano = 9_007_199_254_740_991;
    ctx.status = 200;
    ctx.firstByteAt = 1100.129;
    ctx.traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    ctx.requestedModel = 'gpt';
  },
  'an error: status and code from it, level error': (ctx) => {
    ctx.error = new GatewayError(503, 'api_error', 'no_offer_available', 'x');
  },
  'a client that went away, an error status set apart from the error': (ctx) => {
    ctx.error = new GatewayError(402, 'invalid_request_error', 'insufficient_credit', 'x');
    ctx.status = 502;
    ctx.client.markGone();
  },
  'a model name that needs escapes, cut at 200 characters': (ctx) => {
    ctx.body = { model: 'a"b\\c\n\u0001\u2028é😀'.padEnd(300, 'x') };
  },
  'strings quoted as they are (non-ASCII, DEL) and ones that need escapes (a lone surrogate)': (ctx) => {
    ctx.body = { model: 'modèle-ü\u007f' };
    ctx.requestedModel = 'x\ud800y';
    ctx.offer = { listing: 'a/b@c 😀' } as RequestContext['offer'];
  },
  'durations of every shape, to the hundredth': (ctx) => {
    const durations = [0, 0.004, 0.005, 0.05, 0.1, 0.1 + 0.2, 1.005, 12.3, 99.999, 21_474_836.47, 21_474_836.48, 1e12, 1e21, -1.234, -0.001, -0];
    for (const durationMs of durations) ctx.attempts.push({ listing: 'l', outcome: 'ok', durationMs });
    ctx.firstByteAt = 1000.001 + 0.075;
  },
  'numbers JSON has no spelling for': (ctx) => {
    ctx.chargedNano = NaN;
    ctx.usage = { input: Infinity, output: -0, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 } as RequestContext['usage'];
    ctx.attempts.push({ listing: 'l', outcome: 'ok', durationMs: NaN });
  },
};

for (const [name, arrange] of Object.entries(cases)) {
  t.test(name, async (t) => {
    const ctx = base();
    arrange(ctx);
    const expected = JSON.stringify(requestLine(ctx)) + '\n';
    t.equal(requestLineJson(ctx), expected);
  });
}

t.test("isoNow is toISOString's text, at every millisecond and across seconds", async (t) => {
  const times = [0, 1, 999, 1000, 1001, 59_999, 60_000, -1, -1000, 1_790_000_000_123, 1_790_000_000_999, 1_790_000_001_000, 1_790_000_000_124, 253_402_300_799_999];
  for (let ms = 0; ms < 2500; ms += 7) times.push(1_790_000_000_000 + ms);
  for (const at of times) {
    Date.now = () => at;
    const got = isoNow();
    if (got !== new Date(at).toISOString()) return t.fail(`${at}: ${got} instead of ${new Date(at).toISOString()}`);
  }
  t.pass(`${times.length} times`);
});
