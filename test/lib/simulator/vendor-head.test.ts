// The simulator answers with a vendor's whole head (vendor-headers.ts), as the real APIs do.
import t from 'tap';
import { startSimulator } from '../../../lib/simulator/index.js';

const sim = await startSimulator({});
t.teardown(() => sim.close());

for (const [path, idHeader, limitHeader] of [
  ['/v1/chat/completions', 'x-request-id', 'x-ratelimit-limit-requests'],
  ['/v1/messages', 'request-id', 'anthropic-ratelimit-requests-limit'],
] as const) {
  for (const stream of [false, true]) {
    t.test(`${path}, ${stream ? 'stream' : 'json'}: a full vendor head`, async (t) => {
      const res = await fetch(sim.url + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', authorization: 'Bearer any' },
        body: JSON.stringify({ model: 'm', max_tokens: 10, stream, messages: [{ role: 'user', content: 'hi' }] }),
      });
      await res.text();
      t.equal(res.status, 200);
      t.ok([...res.headers.keys()].length >= 24, `${[...res.headers.keys()].length} headers, as a vendor sends (26, 27)`);
      t.match(res.headers.get(idHeader), /^req_sim\d+$/, 'its request id');
      t.ok(res.headers.get(limitHeader), 'its rate limits');
      t.equal(res.headers.get('server'), 'cloudflare', "the CDN's");
    });
  }
}
