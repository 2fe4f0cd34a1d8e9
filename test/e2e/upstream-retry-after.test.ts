// An upstream's own Retry-After reaches the client: when every offer failed, the 503's Retry-After is
// the soonest any of them may answer. With breakers that open at the first failure and cool down for
// 30 s (an operator's setting), upstreams that answer 429 with retry-after: 7 make it 7, not 30 —
// also for the next request, which finds both breakers open and tries no upstream at all.
import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
t.before(async () => {
  gw = await startGateway({
    configure(cfg) {
      cfg.breaker = { failure_threshold: 1, cooldown_ms: 30_000 };
    },
  });
});
t.teardown(() => gw.close());

t.test('every offer answered 429 with retry-after 7: the client gets 503 with Retry-After 7, in both SDKs', async (t) => {
  const anthropic = new Anthropic({ baseURL: gw.url, apiKey: gw.apiKey, maxRetries: 0 });
  const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.apiKey, maxRetries: 0 });
  // test/claude has two offers, one per simulated provider: the directive reaches both.
  const content = 'Hi <<sim fault=status status=429 retry_after=7>>';
  gw.sim.clear();
  const first = await anthropic.messages.create({ model: 'test/claude', max_tokens: 50, messages: [{ role: 'user', content }] }).catch((e) => e);
  t.type(first, Anthropic.InternalServerError);
  t.match(first, { status: 503, type: 'overloaded_error' });
  t.equal(first.headers.get('retry-after'), '7', "the upstreams' own 7 s, not the breakers' 30 s cooldown");
  t.equal(gw.sim.received.length, 2, 'both offers were tried');

  const second = await openai.chat.completions.create({ model: 'test/claude', messages: [{ role: 'user', content }] }).catch((e) => e);
  t.type(second, OpenAI.InternalServerError);
  t.match(second, { status: 503, type: 'service_unavailable' });
  t.equal(second.headers.get('retry-after'), '7', 'both breakers open: still the upstreams\' time, rounded up');
  t.equal(gw.sim.received.length, 2, 'no upstream was asked again before then');
});
