// Client matrix: the official `@anthropic-ai/sdk` against the gateway, on the messages route's
// same-format path (a messages upstream) and its converted path (a chat upstream).
import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { jsonSchemaOutputFormat } from '@anthropic-ai/sdk/helpers/json-schema';
import { CHAT_MODEL, MESSAGES_MODEL, TOOLS, TWO_TOOL_CALLS, UPSTREAM_FAILS, WEATHER_SCHEMA, pathsOf, rejection, startClientGateway, toolResult, upstreamBodies, weatherSchemaErrors, type ClientGateway } from './harness.js';

let gw: ClientGateway;
t.before(async () => {
  gw = await startClientGateway();
});
t.teardown(() => gw.close());

/** The README's settings: the gateway's root as base URL (the SDK adds /v1), the gateway key. */
const client = (apiKey = gw.apiKey) => new Anthropic({ baseURL: gw.url, apiKey, maxRetries: 0 });

const tools: Anthropic.Tool[] = Object.entries(TOOLS).map(([name, def]) => ({ name, description: def.description, input_schema: def.parameters }));


const textOf = (m: Anthropic.Message) => m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');

for (const path of pathsOf('messages')) {
  t.test(`${path.name} (${path.model})`, async (t) => {
    t.test('text', async (t) => {
      const mark = gw.mark();
      const { data, response } = await client()
        .messages.create({ model: path.model, max_tokens: 200, messages: [{ role: 'user', content: 'Say hello <<sim words=5>>' }] })
        .withResponse();
      upstreamBodies(t, gw, mark, path.upstreamPath);
      t.equal(response.headers.get('x-service-listing'), path.listing);
      t.equal(data.type, 'message');
      t.equal(data.model, path.model);
      t.equal(data.stop_reason, 'end_turn');
      t.equal(textOf(data).split(' ').length, 5);
      t.equal(data.usage.output_tokens, 5);
      t.ok(data.usage.input_tokens > 0);
    });

    t.test('streaming', async (t) => {
      const mark = gw.mark();
      const stream = client().messages.stream({ model: path.model, max_tokens: 200, messages: [{ role: 'user', content: 'Count <<sim words=6>>' }] });
      let text = '';
      let startUsage: Anthropic.Usage | undefined;
      stream.on('text', (delta) => (text += delta));
      stream.on('streamEvent', (e) => {
        // A copy: the stream's message snapshot (and its usage) is updated in place by later events.
        if (e.type === 'message_start') startUsage = { ...e.message.usage };
      });
      const final = await stream.finalMessage();
      upstreamBodies(t, gw, mark, path.upstreamPath);
      t.equal(text.split(' ').length, 6);
      t.equal(final.stop_reason, 'end_turn');
      t.equal(final.usage.output_tokens, 6);
      t.ok((startUsage?.input_tokens ?? 0) > 0, `message_start carries an input estimate (got ${startUsage?.input_tokens})`);
      t.ok(final.usage.input_tokens > 0, 'the final usage carries the input count');
    });

    t.test('tool round trip with two parallel calls', async (t) => {
      const question: Anthropic.MessageParam = { role: 'user', content: `Weather and time in Paris? ${TWO_TOOL_CALLS}` };
      const first = await client().messages.stream({ model: path.model, max_tokens: 500, tools, messages: [question] }).finalMessage();
      t.equal(first.stop_reason, 'tool_use');
      const calls = first.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
      t.strictSame(calls.map((c) => [c.name, c.input]), [
        ['get_weather', { city: 'value-city' }],
        ['get_time', { city: 'value-city' }],
      ]);
      t.equal(new Set(calls.map((c) => c.id)).size, 2, 'two distinct call ids');

      const mark = gw.mark();
      const second = await client().messages.create({
        model: path.model,
        max_tokens: 500,
        tools,
        messages: [
          question,
          { role: 'assistant', content: first.content },
          { role: 'user', content: calls.map((c) => ({ type: 'tool_result' as const, tool_use_id: c.id, content: toolResult(c.name) })) },
        ],
      });
      upstreamBodies(t, gw, mark, path.upstreamPath);
      t.equal(second.stop_reason, 'end_turn', 'the tool results end the loop: the model answers in text');
      t.notOk(second.content.some((b) => b.type === 'tool_use'), 'no new tool calls');
      t.ok(textOf(second), 'a text answer');
    });

    t.test('tool round trip through the SDK toolRunner', async (t) => {
      const ran: string[] = [];
      const runnable = Object.entries(TOOLS).map(([name, def]) =>
        betaTool({
          name,
          description: def.description,
          inputSchema: def.parameters,
          run: () => {
            ran.push(name);
            return toolResult(name);
          },
        }),
      );
      const mark = gw.mark();
      const final = await client().beta.messages.toolRunner({
        model: path.model,
        max_tokens: 500,
        tools: runnable,
        messages: [{ role: 'user', content: `Weather and time in Paris? ${TWO_TOOL_CALLS}` }],
        max_iterations: 4,
      });
      t.strictSame(ran, ['get_weather', 'get_time'], 'both tools ran once');
      t.equal(final.stop_reason, 'end_turn', 'the runner ended with the model answering in text');
      const sent = upstreamBodies(t, gw, mark, path.upstreamPath, 2);
      t.notOk(sent.some((b) => 'thread' in b), 'no thread field reached the upstream');
      t.equal(sent[1]?.messages?.length, path.upstreamPath === '/v1/messages' ? 3 : 4, 'the second turn carried the whole history');
    });

    t.test('structured output (output_config.format json_schema)', async (t) => {
      const mark = gw.mark();
      const r = await client().messages.parse({
        model: path.model,
        max_tokens: 500,
        messages: [{ role: 'user', content: 'The weather in Paris, as JSON.' }],
        output_config: { format: jsonSchemaOutputFormat(WEATHER_SCHEMA) },
      }).catch((e: unknown) => e as Error);
      upstreamBodies(t, gw, mark, path.upstreamPath);
      if (r instanceof Error) return t.fail(`the SDK could not parse the answer: ${r.message}`);
      t.equal(weatherSchemaErrors(r.parsed_output), null, 'parsed_output validates against the schema');
      t.equal(weatherSchemaErrors(JSON.parse(textOf(r))), null, 'the text is that JSON');
    });

    t.test('thinking round trip (signed thinking sent back with the tool results)', async (t) => {
      const question: Anthropic.MessageParam = { role: 'user', content: `Think, then call both tools. ${TWO_TOOL_CALLS}` };
      const thinking = { type: 'enabled', budget_tokens: 1024 } as const;
      const first = await client().messages.stream({ model: path.model, max_tokens: 4000, thinking, tools, messages: [question] }).finalMessage();
      const block = first.content[0] as Anthropic.ThinkingBlock;
      t.match(block, { type: 'thinking', thinking: /\w/, signature: /.+/ }, 'a signed thinking block comes first');
      const calls = first.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
      t.equal(calls.length, 2);

      const mark = gw.mark();
      await client().messages.create({
        model: path.model,
        max_tokens: 4000,
        thinking,
        tools,
        messages: [
          question,
          { role: 'assistant', content: first.content },
          { role: 'user', content: calls.map((c) => ({ type: 'tool_result' as const, tool_use_id: c.id, content: toolResult(c.name) })) },
        ],
      });
      const [sent] = upstreamBodies(t, gw, mark, path.upstreamPath);
      const assistant = sent.messages.find((m: any) => m.role === 'assistant');
      if (path.upstreamPath === '/v1/messages') {
        t.match(assistant.content[0], { type: 'thinking', thinking: block.thinking, signature: block.signature }, 'the signed block went back unchanged');
      } else {
        t.match(assistant.reasoning_details, [{ type: 'thinking', thinking: block.thinking, signature: block.signature }], 'as reasoning_details');
      }
    });
  });
}

t.test('models.list (with paging) and models.retrieve', async (t) => {
  const ids: string[] = [];
  for await (const m of client().models.list()) ids.push(m.id);
  t.strictSame(ids.sort(), [MESSAGES_MODEL, CHAT_MODEL].sort());

  const page = await client().models.list({ limit: 1 });
  t.equal(page.data.length, 1, 'limit=1: one model');
  t.equal(page.has_more, true, 'has_more');
  t.equal(page.last_id, page.data[0]?.id, 'last_id');
  const paged: string[] = [];
  for await (const m of client().models.list({ limit: 1 })) paged.push(m.id);
  t.strictSame(paged.sort(), ids, 'auto-pagination with after_id walks every model once');

  for (const id of [MESSAGES_MODEL, CHAT_MODEL]) {
    const m = await client().models.retrieve(id).catch((e: unknown) => e);
    t.match(m, { type: 'model', id, display_name: String, created_at: String }, `retrieve ${id} (the SDK sends the / encoded)`);
  }
  t.type(await rejection(client().models.retrieve('no/such-model')), Anthropic.NotFoundError, 'an unknown id: NotFoundError');
});

t.test('failure answers, as the SDK surfaces them', async (t) => {
  for (const path of pathsOf('messages')) {
    const ask = (apiKey: string, content = 'Hi <<sim words=3>>') =>
      client(apiKey).messages.create({ model: path.model, max_tokens: 1000, messages: [{ role: 'user', content }] });

    const e401 = await rejection(ask(gw.wrongKey));
    t.type(e401, Anthropic.AuthenticationError, `${path.name}: 401 → AuthenticationError`);
    t.match(e401, { status: 401, error: { type: 'error', error: { type: 'authentication_error', message: /key/i } } });

    const e402 = await rejection(ask(gw.poorKey));
    t.type(e402, Anthropic.PaymentRequiredError, `${path.name}: 402 → PaymentRequiredError`);
    t.match(e402, { status: 402, error: { error: { type: 'billing_error', message: /credit/i } } });

    const e429 = await rejection(ask(await gw.keyOverItsLimit()));
    t.type(e429, Anthropic.RateLimitError, `${path.name}: 429 → RateLimitError`);
    t.match(e429, { status: 429, error: { error: { type: 'rate_limit_error' } } });
    t.ok(Number(e429.headers.get('retry-after')) > 0, 'with Retry-After');

    const e503 = await rejection(ask(gw.apiKey, `Hi ${UPSTREAM_FAILS}`));
    t.type(e503, Anthropic.ServiceUnavailableError, `${path.name}: 503 → ServiceUnavailableError`);
    t.match(e503, { status: 503, error: { error: { type: 'overloaded_error' } } });
    t.ok(Number(e503.headers.get('retry-after')) > 0, 'with Retry-After');
  }
});
