// Wire facts the core reads from upstreams: a vendor's in-stream error in the gateway's vocabulary
// (the nearest type, the vendor's message and code), and the upstream's own Retry-After.
import t from 'tap';
import { retryAfterMsOf, vendorErrorOf } from '../../lib/wire.js';

t.test('vendorErrorOf: a messages vendor keeps its type; an unknown one is api_error', async (t) => {
  t.same(vendorErrorOf('messages', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }), { type: 'overloaded_error', message: 'Overloaded', code: 'overloaded_error' });
  t.same(vendorErrorOf('messages', { type: 'error', error: { type: 'rate_limit_error', message: 'Slow down' } }), { type: 'rate_limit_error', message: 'Slow down', code: 'rate_limit_error' });
  t.same(vendorErrorOf('messages', { type: 'error', error: { type: 'brand_new_error', message: 'x' } }), { type: 'api_error', message: 'x', code: 'brand_new_error' });
  t.same(vendorErrorOf('messages', { type: 'error' }), { type: 'api_error', message: 'the upstream reported an error', code: undefined });
});

t.test('vendorErrorOf: chat types and codes → the nearest messages type', async (t) => {
  const cases: [Record<string, unknown>, string, string | undefined][] = [
    [{ type: 'server_error', code: null }, 'overloaded_error', 'server_error'],
    [{ type: 'requests', code: 'rate_limit_exceeded' }, 'rate_limit_error', 'rate_limit_exceeded'],
    [{ type: 'tokens' }, 'rate_limit_error', 'tokens'],
    [{ type: 'insufficient_quota', code: 'insufficient_quota' }, 'billing_error', 'insufficient_quota'],
    [{ type: 'invalid_request_error', code: 'tool_use_failed' }, 'invalid_request_error', 'tool_use_failed'],
    [{ type: 'invalid_request_error', code: 'context_length_exceeded' }, 'invalid_request_error', 'context_length_exceeded'],
    // A type the table lacks: its code decides.
    [{ type: 'something', code: 'rate_limit_exceeded' }, 'rate_limit_error', 'rate_limit_exceeded'],
    [{ type: 'something' }, 'api_error', 'something'],
    // Not shaped like a code: left out (it would reach the client as one).
    [{ type: 'weird type with spaces <script>' }, 'api_error', undefined],
  ];
  for (const [error, type, code] of cases) {
    t.same(vendorErrorOf('chat', { error: { message: 'm', ...error } }), { type, message: 'm', code }, JSON.stringify(error));
  }
});

t.test('retryAfterMsOf: retry-after-ms first, then retry-after in seconds or as an HTTP date', async (t) => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  t.equal(retryAfterMsOf({ 'retry-after': '7' }, now), 7000);
  t.equal(retryAfterMsOf({ 'retry-after': ' 1.5 ' }, now), 1500);
  t.equal(retryAfterMsOf({ 'retry-after-ms': '250', 'retry-after': '7' }, now), 250);
  t.equal(retryAfterMsOf({ 'retry-after': 'Wed, 01 Jan 2025 00:00:30 GMT' }, now), 30_000);
  t.equal(retryAfterMsOf({ 'retry-after': 'Tue, 31 Dec 2024 23:59:00 GMT' }, now), 0, 'a date in the past: now');
  for (const v of ['', 'soon', '-3', '1e9x']) t.equal(retryAfterMsOf({ 'retry-after': v }, now), undefined, JSON.stringify(v));
  t.equal(retryAfterMsOf({ 'retry-after-ms': 'abc' }, now), undefined);
  t.equal(retryAfterMsOf({}, now), undefined);
});
