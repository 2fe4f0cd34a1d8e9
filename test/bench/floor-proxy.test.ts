// The floor proxy (bench/floor-proxy.ts) answers as the upstream did, through the gateway's own
// transport: judged by the OpenAI SDK against the simulator.
import t from 'tap';
import OpenAI from 'openai';
import { startSimulator } from '../../lib/simulator/index.js';
import { startFloorProxyProcess } from '../../bench/setup.js';

const KEY = 'sk-upstream-test';
const sim = await startSimulator({ apiKey: KEY });
t.teardown(() => sim.close());
const floor = await startFloorProxyProcess(sim.url);
t.teardown(() => floor.stop());

t.test('a chat answer comes back whole, with the upstream key the client sent', async (t) => {
  sim.clear();
  const client = new OpenAI({ baseURL: floor.url + '/v1', apiKey: KEY, maxRetries: 0 });
  const res = await client.chat.completions.create({ model: 'floor-model', messages: [{ role: 'user', content: 'Hello there' }] });
  t.equal(res.object, 'chat.completion');
  t.equal(res.model, 'floor-model');
  t.ok(res.choices[0].message.content?.length, 'the answer has text');
  t.ok(res.usage && res.usage.completion_tokens > 0, 'and its usage');
  t.equal(sim.received.length, 1, 'one upstream request');
});

t.test('an upstream error passes through with its status', async (t) => {
  const client = new OpenAI({ baseURL: floor.url + '/v1', apiKey: 'sk-wrong', maxRetries: 0 });
  const err = await client.chat.completions.create({ model: 'floor-model', messages: [{ role: 'user', content: 'Hi' }] }).catch((e) => e);
  t.equal(err.status, 401);
});
