// Message threads against the official Anthropic SDK: the gateway holds none, so a `continue` is
// answered 404 thread_not_found and the SDK resends the whole conversation; no `thread` field ever
// reaches an upstream. The tool runner (which threads by default) completes its tool round trips
// on a messages upstream and across the conversion to a chat upstream, streamed or not.
import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { errorWith } from '../helpers/error-pattern.js';

let gw: TestGateway;
t.before(async () => {
  gw = await startGateway();
});
t.teardown(() => gw.close());

/** The statuses the gateway answered this client's requests with, in order. */
let statuses: number[] = [];
const anthropic = () =>
  new Anthropic({
    baseURL: gw.url,
    apiKey: gw.apiKey,
    maxRetries: 0,
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      statuses.push(res.status);
      return res;
    },
  });

/** A tool the runner calls, counting its calls. */
function weatherTool() {
  const calls: unknown[] = [];
  const tool = betaTool({
    name: 'get_weather',
    description: 'Current weather',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    run: async (input) => {
      calls.push(input);
      return 'Sunny, 21 °C';
    },
  });
  return { tool, calls };
}

for (const [route, model, listing] of [
  ['a messages upstream', 'test/claude', 'test/claude@sim-messages'],
  ['a chat upstream (converted)', 'test/gpt', 'test/gpt@sim-chat'],
] as const) {
  for (const stream of [false, true]) {
    t.test(`the tool runner's turns after the first complete, on ${route}${stream ? ', streamed' : ''}`, async (t) => {
      gw.sim.clear();
      statuses = [];
      const { tool, calls } = weatherTool();
      const runner = anthropic().beta.messages.toolRunner({
        model,
        max_tokens: 200,
        system: 'You check the weather.',
        tools: [tool],
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        // A forced tool choice (which the runner sends on every turn) makes the upstream call the
        // tool again after each result, as the vendors do: stop after three.
        tool_choice: { type: 'tool', name: 'get_weather' },
        max_iterations: 3,
        ...(stream ? { stream: true as const } : {}),
      });
      const replies: Anthropic.Beta.BetaMessage[] = [];
      for await (const item of runner) replies.push(stream ? await (item as any).finalMessage() : (item as Anthropic.Beta.BetaMessage));
      t.equal(replies.length, 3, 'three turns answered');
      t.equal(calls.length, 3, 'the tool ran once per turn');
      for (const r of replies) t.equal(r.stop_reason, 'tool_use');

      // Turn 1 creates a thread (served as a plain request); turns 2 and 3 continue it, are told the
      // thread is not found and resend everything; after the second lost thread the runner stops
      // threading (its continue_unthreaded behaviour), so a later turn would be one request.
      t.same(statuses, [200, 404, 200, 404, 200], 'each continue: 404, then the whole conversation');
      const upstream = gw.sim.received.filter((r) => r.method === 'POST');
      t.equal(upstream.length, 3, 'only the full conversations reached the upstream');
      for (const r of upstream) {
        t.notOk('thread' in r.body, 'no thread field upstream');
        t.notMatch(String(r.headers['anthropic-beta'] ?? ''), /message-threads/, 'nor the threads beta');
      }
      const last = upstream.at(-1)!.body;
      const turns = listing.endsWith('sim-chat') ? last.messages.filter((m: any) => m.role !== 'system') : last.messages;
      t.equal(turns.length, 5, 'the last upstream request held the whole conversation: question, 2 calls, 2 results');
      t.equal(upstream.at(-1)!.path.startsWith(listing.endsWith('sim-chat') ? '/v1/chat' : '/v1/messages'), true);
    });
  }
}

t.test('a continue gets the vendor\'s 404 thread_not_found, which the SDK types as ThreadNotFoundError', async (t) => {
  gw.sim.clear();
  const continued = anthropic().beta.messages.create({
    model: 'test/claude',
    max_tokens: 50,
    messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '42' }] }],
    thread: { type: 'continue', previous_message_id: 'msg_01XYZ' },
  });
  await t.rejects(continued, errorWith({ status: 404, errorCode: 'thread_not_found', constructor: Anthropic.ThreadNotFoundError }));
  const err = await continued.catch((e) => e);
  t.match(err.error, { type: 'error', error: { type: 'not_found_error', message: /"msg_01XYZ"/, details: { error_code: 'thread_not_found' } } });
  t.equal(gw.sim.received.length, 0, 'the upstream was not called');
});

t.test('a thread made with client.beta.messages.thread() goes on turn after turn', async (t) => {
  gw.sim.clear();
  const thread = anthropic().beta.messages.thread({ model: 'test/claude', max_tokens: 50 });
  const first = await thread.send({ role: 'user', content: 'Hello <<sim words=2>>' });
  const second = await thread.send({ role: 'user', content: 'And again' });
  const third = await thread.send({ role: 'user', content: 'Once more' });
  t.equal([first, second, third].filter((m) => m.content.length > 0).length, 3);
  const upstream = gw.sim.received.filter((r) => r.method === 'POST');
  t.same(upstream.map((r) => r.body.messages.length), [1, 3, 5], 'each turn sent the whole conversation upstream');
  t.notOk(upstream.some((r) => 'thread' in r.body));
});

t.test('a chat client\'s thread is an unknown field: never forwarded', async (t) => {
  gw.sim.clear();
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'test/gpt', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }], thread: { type: 'continue', previous_message_id: 'x' } }),
  });
  t.equal(res.status, 200);
  t.notOk('thread' in gw.sim.received.at(-1)!.body);
});
