// Forced tool choice and structured output through the gateway with the shipped config's simulated
// offers, driven by the official SDKs on both routes: each model's cheapest offer speaks one format,
// so each client reaches one model by passthrough and the other across the conversion.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { jsonSchemaOutputFormat } from '@anthropic-ai/sdk/helpers/json-schema';
import { packageRoot } from '../../lib/package-root.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { schemaErrors } from '../helpers/json-schema.js';

let gw: TestGateway;
t.before(async () => {
  const shipped = parseYaml(readFileSync(resolve(packageRoot(), 'config/gateway.yaml'), 'utf8'));
  gw = await startGateway({
    configure(cfg) {
      cfg.providers = shipped.providers;
      cfg.models = shipped.models;
      cfg.offers = shipped.offers;
    },
  });
});
t.teardown(() => gw.close());

const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.apiKey, maxRetries: 0 });
const anthropic = () => new Anthropic({ baseURL: gw.url, apiKey: gw.apiKey, maxRetries: 0 });
/** demo/gpt-like is served by the chat offer, demo/claude-like by the messages offer. */
const CHAT_ROUTES = [
  { model: 'demo/gpt-like', listing: 'demo/gpt-like@sim-chat', path: 'passthrough' },
  { model: 'demo/claude-like', listing: 'demo/claude-like@sim-messages', path: 'converted' },
];
const MESSAGES_ROUTES = [
  { model: 'demo/claude-like', listing: 'demo/claude-like@sim-messages', path: 'passthrough' },
  { model: 'demo/gpt-like', listing: 'demo/gpt-like@sim-chat', path: 'converted' },
];

const ticket = {
  type: 'object',
  properties: {
    title: { type: 'string' },
    priority: { type: 'string', enum: ['low', 'high'] },
    labels: { type: 'array', items: { type: 'string' } },
    due: { type: 'string', format: 'date' },
    owner: { type: 'object', properties: { name: { type: 'string' }, email: { type: 'string', format: 'email' } }, required: ['name', 'email'], additionalProperties: false },
  },
  required: ['title', 'priority', 'labels', 'due', 'owner'],
  additionalProperties: false,
} as const;
const weatherSchema = { type: 'object', properties: { city: { type: 'string' }, unit: { enum: ['c', 'f'] }, days: { type: 'integer', minimum: 1, maximum: 7 } }, required: ['city', 'unit'] };
const chatTools: OpenAI.ChatCompletionFunctionTool[] = [
  { type: 'function', function: { name: 'get_weather', parameters: weatherSchema } },
  { type: 'function', function: { name: 'create_ticket', parameters: ticket } },
];
const messagesTools: Anthropic.Tool[] = chatTools.map((tool) => ({ name: tool.function.name, input_schema: tool.function.parameters as Anthropic.Tool.InputSchema }));
const schemaOf = (name: string) => (name === 'get_weather' ? weatherSchema : ticket);

for (const route of CHAT_ROUTES) {
  t.test(`openai SDK, ${route.path} (${route.model}): parse() with a json_schema response_format`, async (t) => {
    const body = {
      model: route.model,
      max_tokens: 1000,
      messages: [{ role: 'user' as const, content: 'File a ticket for the broken printer' }],
      // description: optional in the vendor's json_schema format, sent by client libraries.
      response_format: { type: 'json_schema' as const, json_schema: { name: 'ticket', description: 'A support ticket', schema: ticket, strict: true } },
    };
    const { data, response } = await openai().chat.completions.parse(body).withResponse();
    t.equal(response.headers.get('x-service-listing'), route.listing);
    if (route.path === 'passthrough') t.same(gw.sim.received.at(-1)?.body.response_format, body.response_format, 'forwarded as sent');
    t.equal(data.choices[0].finish_reason, 'stop');
    t.equal(schemaErrors(ticket, data.choices[0].message.parsed), undefined, JSON.stringify(data.choices[0].message.parsed));
    const streamed = await openai().chat.completions.stream(body).finalChatCompletion();
    t.equal(schemaErrors(ticket, JSON.parse(streamed.choices[0].message.content!)), undefined, 'streamed');
  });

  t.test(`openai SDK, ${route.path} (${route.model}): tool_choice required with two tools, then the loop ends`, async (t) => {
    const question: OpenAI.ChatCompletionMessageParam = { role: 'user', content: 'What should I wear in Oslo?' };
    for (const stream of [false, true]) {
      const body = { model: route.model, max_tokens: 1000, messages: [question], tools: chatTools, tool_choice: 'required' as const };
      const res = stream ? await openai().chat.completions.stream(body).finalChatCompletion() : await openai().chat.completions.create(body);
      const message = res.choices[0].message;
      t.equal(res.choices[0].finish_reason, 'tool_calls', `stream: ${stream}`);
      const calls = (message.tool_calls ?? []).filter((c) => c.type === 'function');
      t.ok(calls.length >= 1, 'a forced call');
      for (const call of calls) t.equal(schemaErrors(schemaOf(call.function.name), JSON.parse(call.function.arguments)), undefined, `${call.function.name}(${call.function.arguments})`);
      // The client runs the tools and sends the results without a tool_choice: the model answers.
      const results: OpenAI.ChatCompletionMessageParam[] = calls.map((c) => ({ role: 'tool', tool_call_id: c.id, content: 'done' }));
      const final = await openai().chat.completions.create({ model: route.model, max_tokens: 1000, messages: [question, message, ...results], tools: chatTools });
      t.equal(final.choices[0].finish_reason, 'stop', 'the agent loop ends with a text answer');
      t.ok(final.choices[0].message.content);
    }
    const named = await openai().chat.completions.create({ model: route.model, max_tokens: 1000, messages: [question], tools: chatTools, tool_choice: { type: 'function', function: { name: 'create_ticket' } } });
    const call = named.choices[0].message.tool_calls![0];
    t.equal(call.type === 'function' && call.function.name, 'create_ticket', 'the named function');
  });
}

t.test('openai SDK, passthrough: response_format json_object', async (t) => {
  const res = await openai().chat.completions.create({ model: 'demo/gpt-like', max_tokens: 100, messages: [{ role: 'user', content: 'Reply in JSON' }], response_format: { type: 'json_object' } });
  const value = JSON.parse(res.choices[0].message.content!);
  t.equal(typeof value, 'object');
  t.not(value, null);
});

for (const route of MESSAGES_ROUTES) {
  t.test(`anthropic SDK, ${route.path} (${route.model}): tool_choice any and tool`, async (t) => {
    const question: Anthropic.MessageParam = { role: 'user', content: 'What should I wear in Oslo?' };
    for (const stream of [false, true]) {
      const body = { model: route.model, max_tokens: 1000, messages: [question], tools: messagesTools, tool_choice: { type: 'any' as const } };
      const { data: msg, response } = stream
        ? { data: await anthropic().messages.stream(body).finalMessage(), response: undefined }
        : await anthropic().messages.create(body).withResponse();
      if (response) t.equal(response.headers.get('x-service-listing'), route.listing);
      t.equal(msg.stop_reason, 'tool_use', `stream: ${stream}`);
      const uses = msg.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
      t.ok(uses.length >= 1, 'a forced call');
      for (const use of uses) t.equal(schemaErrors(schemaOf(use.name), use.input), undefined, `${use.name}(${JSON.stringify(use.input)})`);
      const final = await anthropic().messages.create({
        model: route.model,
        max_tokens: 1000,
        tools: messagesTools,
        messages: [question, { role: 'assistant', content: msg.content }, { role: 'user', content: uses.map((u) => ({ type: 'tool_result' as const, tool_use_id: u.id, content: 'done' })) }],
      });
      t.equal(final.stop_reason, 'end_turn', 'the agent loop ends with a text answer');
    }
    const named = await anthropic().messages.create({ model: route.model, max_tokens: 1000, messages: [question], tools: messagesTools, tool_choice: { type: 'tool', name: 'create_ticket' } });
    t.same(named.content.map((b) => (b.type === 'tool_use' ? b.name : b.type)), ['create_ticket'], 'the named tool');
  });

  t.test(`anthropic SDK, ${route.path} (${route.model}): parse() with output_config.format`, async (t) => {
    const body = {
      model: route.model,
      max_tokens: 1000,
      messages: [{ role: 'user' as const, content: 'File a ticket for the broken printer' }],
      output_config: { format: jsonSchemaOutputFormat(ticket) },
    };
    const data = await anthropic().messages.parse(body);
    t.equal(gw.sim.received.at(-1)?.path, route.listing.endsWith('@sim-chat') ? '/v1/chat/completions' : '/v1/messages', 'served by the expected upstream format');
    t.equal(data.stop_reason, 'end_turn');
    t.equal(schemaErrors(ticket, data.parsed_output), undefined, JSON.stringify(data.parsed_output));
    const streamed = await anthropic().messages.stream(body).finalMessage();
    t.equal(schemaErrors(ticket, streamed.parsed_output), undefined, 'streamed');
  });
}
