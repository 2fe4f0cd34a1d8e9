// Client matrix: the official `openai` package (chat completions) against the gateway, on the chat
// route's same-format path (a chat upstream) and its converted path (a messages upstream).
import t from 'tap';
import OpenAI from 'openai';
import { CHAT_MODEL, MESSAGES_MODEL, TOOLS, TWO_TOOL_CALLS, UPSTREAM_FAILS, WEATHER_SCHEMA, pathsOf, rejection, startClientGateway, toolResult, upstreamBodies, weatherSchemaErrors, type ClientGateway } from './harness.js';

let gw: ClientGateway;
t.before(async () => {
  gw = await startClientGateway();
});
t.teardown(() => gw.close());

/** The README's settings: base URL with `/v1`, the gateway key; no retries so failures answer at once. */
const client = (apiKey = gw.apiKey) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey, maxRetries: 0 });

const tools: OpenAI.ChatCompletionTool[] = Object.entries(TOOLS).map(([name, def]) => ({
  type: 'function',
  function: { name, description: def.description, parameters: def.parameters },
}));

for (const path of pathsOf('chat')) {
  t.test(`${path.name} (${path.model})`, async (t) => {
    t.test('text', async (t) => {
      const mark = gw.mark();
      const { data, response } = await client()
        .chat.completions.create({ model: path.model, max_completion_tokens: 200, messages: [{ role: 'user', content: 'Say hello <<sim words=5>>' }] })
        .withResponse();
      upstreamBodies(t, gw, mark, path.upstreamPath);
      t.equal(response.headers.get('x-service-listing'), path.listing);
      t.equal(data.object, 'chat.completion');
      t.equal(data.model, path.model);
      t.equal(data.choices[0].finish_reason, 'stop');
      t.equal(data.choices[0].message.content?.split(' ').length, 5);
      t.equal(data.usage?.completion_tokens, 5);
      t.ok(data.usage!.prompt_tokens > 0);
    });

    t.test('streaming', async (t) => {
      const mark = gw.mark();
      const stream = await client().chat.completions.create({
        model: path.model,
        max_completion_tokens: 200,
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'Count <<sim words=6>>' }],
      });
      let text = '';
      let finish: string | null = null;
      let usage: OpenAI.CompletionUsage | null | undefined;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
        usage = chunk.usage ?? usage;
      }
      upstreamBodies(t, gw, mark, path.upstreamPath);
      t.equal(text.split(' ').length, 6);
      t.equal(finish, 'stop');
      t.equal(usage?.completion_tokens, 6, 'the usage chunk arrived');
    });

    t.test('tool round trip with two parallel calls', async (t) => {
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: `Weather and time in Paris? ${TWO_TOOL_CALLS}` }];
      // The first turn streams (the SDK assembles the call fragments), the answer to it does not.
      const first = await client().chat.completions.stream({ model: path.model, max_completion_tokens: 500, tools, messages }).finalChatCompletion();
      const choice = first.choices[0];
      t.equal(choice.finish_reason, 'tool_calls');
      const calls = (choice.message.tool_calls ?? []) as OpenAI.ChatCompletionMessageFunctionToolCall[];
      t.strictSame(calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]), [
        ['get_weather', { city: 'value-city' }],
        ['get_time', { city: 'value-city' }],
      ]);
      t.equal(new Set(calls.map((c) => c.id)).size, 2, 'two distinct call ids');

      messages.push(choice.message, ...calls.map((c): OpenAI.ChatCompletionToolMessageParam => ({ role: 'tool', tool_call_id: c.id, content: toolResult(c.function.name) })));
      const mark = gw.mark();
      const second = await client().chat.completions.create({ model: path.model, max_completion_tokens: 500, tools, messages });
      upstreamBodies(t, gw, mark, path.upstreamPath);
      t.equal(second.choices[0].finish_reason, 'stop', 'the tool results end the loop: the model answers in text');
      t.notOk(second.choices[0].message.tool_calls?.length, 'no new tool calls');
      t.ok(second.choices[0].message.content, 'a text answer');
    });

    t.test('structured output (response_format json_schema)', async (t) => {
      const mark = gw.mark();
      const r = await client().chat.completions.create({
        model: path.model,
        max_completion_tokens: 500,
        messages: [{ role: 'user', content: 'The weather in Paris, as JSON.' }],
        response_format: { type: 'json_schema', json_schema: { name: 'weather', schema: WEATHER_SCHEMA, strict: true } },
      });
      upstreamBodies(t, gw, mark, path.upstreamPath);
      const content = r.choices[0].message.content ?? '';
      let parsed: unknown;
      t.doesNotThrow(() => (parsed = JSON.parse(content)), `the content is JSON: ${content.slice(0, 120)}`);
      t.equal(weatherSchemaErrors(parsed), null, 'the content validates against the schema');
    });

    t.test('reasoning round trip (reasoning_effort; reasoning_details sent back)', async (t) => {
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: `Think, then call both tools. ${TWO_TOOL_CALLS}` }];
      const first = await client().chat.completions.create({ model: path.model, max_completion_tokens: 4000, reasoning_effort: 'low', tools, messages });
      const message = first.choices[0].message as OpenAI.ChatCompletionMessage & { reasoning_content?: string; reasoning_details?: any[] };
      t.ok(message.reasoning_content, 'the reasoning text arrives as reasoning_content');
      t.match(message.reasoning_details, [{ type: 'thinking', thinking: message.reasoning_content, signature: /.+/ }], 'and signed in reasoning_details');
      const calls = (message.tool_calls ?? []) as OpenAI.ChatCompletionMessageFunctionToolCall[];
      t.equal(calls.length, 2);

      // As users do: the assistant message goes back as it came (extra fields included).
      messages.push(message, ...calls.map((c): OpenAI.ChatCompletionToolMessageParam => ({ role: 'tool', tool_call_id: c.id, content: toolResult(c.function.name) })));
      const mark = gw.mark();
      // The upstream checks the signature: a dropped or altered one would make this request fail.
      await client().chat.completions.create({ model: path.model, max_completion_tokens: 4000, reasoning_effort: 'low', tools, messages });
      const [sent] = upstreamBodies(t, gw, mark, path.upstreamPath);
      const assistant = sent.messages.find((m: any) => m.role === 'assistant');
      const signature = message.reasoning_details![0].signature;
      if (path.upstreamPath === '/v1/messages') {
        t.match(assistant.content[0], { type: 'thinking', thinking: message.reasoning_content, signature }, 'the signed thinking block went back first');
      } else {
        t.match(assistant.reasoning_details, [{ type: 'thinking', signature }], 'reasoning_details went back unchanged');
      }
    });
  });
}

t.test('models.list and models.retrieve', async (t) => {
  const ids: string[] = [];
  for await (const m of client().models.list()) ids.push(m.id);
  t.strictSame(ids.sort(), [MESSAGES_MODEL, CHAT_MODEL].sort());
  for (const id of [MESSAGES_MODEL, CHAT_MODEL]) {
    const m = await client().models.retrieve(id).catch((e: unknown) => e);
    t.match(m, { id, object: 'model', owned_by: String }, `retrieve ${id} (the SDK sends the / encoded)`);
  }
  const missing = await rejection(client().models.retrieve('no/such-model'));
  t.type(missing, OpenAI.NotFoundError, 'an unknown id: NotFoundError');
});

t.test('failure answers, as the SDK surfaces them', async (t) => {
  for (const path of pathsOf('chat')) {
    const ask = (apiKey: string, content = 'Hi <<sim words=3>>') =>
      client(apiKey).chat.completions.create({ model: path.model, max_completion_tokens: 1000, messages: [{ role: 'user', content }] });

    const e401 = await rejection(ask(gw.wrongKey));
    t.type(e401, OpenAI.AuthenticationError, `${path.name}: 401 → AuthenticationError`);
    t.match(e401, { status: 401, type: 'authentication_error', message: /key/i });

    const e402 = await rejection(ask(gw.poorKey));
    t.type(e402, OpenAI.APIError, `${path.name}: 402 → APIError (the SDK has no class of its own for 402)`);
    t.match(e402, { status: 402, type: 'insufficient_quota', message: /credit/i });

    const e429 = await rejection(ask(await gw.keyOverItsLimit()));
    t.type(e429, OpenAI.RateLimitError, `${path.name}: 429 → RateLimitError`);
    t.match(e429, { status: 429, type: 'rate_limit_error', code: 'rate_limit_requests' });
    t.ok(Number(e429.headers.get('retry-after')) > 0, 'with Retry-After');

    const e503 = await rejection(ask(gw.apiKey, `Hi ${UPSTREAM_FAILS}`));
    t.type(e503, OpenAI.InternalServerError, `${path.name}: 503 → InternalServerError`);
    t.match(e503, { status: 503, type: 'service_unavailable' });
    t.ok(Number(e503.headers.get('retry-after')) > 0, 'with Retry-After');
  }
});
