// The metrics' own pieces: histogram cells count a value equal to a bound in that bound's bucket
// (Prometheus `le`), and failed attempts become one word of a fixed list whatever their text.
import t from 'tap';
import { Registry } from 'prom-client';
import { HistogramFamily } from '../../lib/metrics/families.js';
import { attemptReason } from '../../lib/metrics/attempt-reason.js';
import { parseSamples } from '../helpers/prometheus.js';

t.test('histogram buckets are cumulative, a value on a bound counts in it, the rest in +Inf', async (t) => {
  const registry = new Registry();
  const h = new HistogramFamily('x_seconds', 'test', ['route'], [0.001, 0.01, 1], registry);
  const cell = h.cell('chat');
  for (const v of [0.0005, 0.001, 0.002, 1, 5]) cell.observe(v);
  const samples = parseSamples(await registry.metrics());
  const bucket = (le: string) => samples.find((s) => s.name === 'x_seconds_bucket' && s.labels.le === le)?.value;
  t.same([bucket('0.001'), bucket('0.01'), bucket('1'), bucket('+Inf')], [2, 3, 4, 5]);
  t.equal(samples.find((s) => s.name === 'x_seconds_count')?.value, 5);
  t.equal(samples.find((s) => s.name === 'x_seconds_sum')?.value, 0.0005 + 0.001 + 0.002 + 1 + 5);
  t.equal(h.cell('chat'), cell, 'one cell per label values');
});

t.test('attempt reasons are a fixed list of words', async (t) => {
  const failed = (reason: string, status?: number) => attemptReason({ listing: 'l', outcome: 'failed', reason, status, durationMs: 1 });
  t.equal(attemptReason({ listing: 'l', outcome: 'ok', durationMs: 1 }), 'none');
  t.equal(attemptReason({ listing: 'l', outcome: 'skipped', reason: 'cooling down after repeated failures', durationMs: 0 }), 'breaker_open');
  t.equal(failed('upstream 429 (rate limited)', 429), 'http_429');
  t.equal(failed('upstream 418', 418), 'http_4xx');
  t.equal(failed('upstream 599', 599), 'http_5xx');
  t.equal(failed('no response headers within 1500 ms'), 'first_byte_timeout');
  t.equal(failed('upstream stream idle for 1500 ms'), 'idle_timeout');
  t.equal(failed('upstream error event: overloaded, key sk-abc123'), 'stream_error');
  t.equal(failed('upstream answered with a body that is not JSON'), 'bad_response');
  t.equal(failed('ECONNREFUSED (connect ECONNREFUSED 10.0.0.1:443)'), 'network');
  t.equal(failed('anything else an upstream might say'), 'network');
});
