// JSON output on both wires: chat response_format json_object / json_schema, messages
// output_config.format; whole and streamed (text deltas), cut short by the output budget, refused
// as the vendor refuses it.
import t from 'tap';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { SseParser } from '../../../lib/sse.js';
import { startSimulator } from '../../../lib/simulator/index.js';
import { errorWith } from '../../helpers/error-pattern.js';
import { schemaErrors } from '../../helpers/json-schema.js';

const KEY = 'sk-upstream-json';
const sim = await startSimulator({ apiKey: KEY });
t.teardown(() => sim.close());
const openai = new OpenAI({ baseURL: sim.url + '/v1', apiKey: KEY, maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: sim.url, apiKey: KEY, maxRetries: 0 });

/** A strict schema (every property required, objects closed), as OpenAI's strict mode and Anthropic want. */
const recipe = {
  type: 'object',
  properties: {
    title: { type: 'string' },
    servings: { type: 'integer', minimum: 1, maximum: 12 },
    vegetarian: { type: 'boolean' },
    steps: { type: 'array', items: { type: 'object', properties: { order: { type: 'integer' }, text: { type: 'string', minLength: 10 } }, required: ['order', 'text'], additionalProperties: false } },
    cuisine: { anyOf: [{ type: 'string', enum: ['italian', 'thai'] }, { type: 'null' }] },
    source: { type: 'string', format: 'uri' },
  },
  required: ['title', 'servings', 'vegetarian', 'steps', 'cuisine', 'source'],
  additionalProperties: false,
};
const jsonSchema = { type: 'json_schema' as const, json_schema: { name: 'recipe', schema: recipe, strict: true } };

/** The `data:` payloads of a raw stream. */
async function rawEvents(path: string, body: object, headers: Record<string, string>): Promise<any[]> {
  const res = await fetch(sim.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ ...body, stream: true }) });
  const parser = new SseParser();
  const out: any[] = [];
  for await (const chunk of res.body!) for (const e of parser.push(chunk)) if (e.data !== '[DONE]') out.push(JSON.parse(e.data));
  return out;
}
const chatHeaders = { authorization: `Bearer ${KEY}` };
const messagesHeaders = { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' };

t.test('chat json_schema: parse() gets a value of the schema, whole and streamed in content deltas', async (t) => {
  const body = { model: 'm', messages: [{ role: 'user' as const, content: 'A recipe please' }], response_format: jsonSchema };
  const parsed = await openai.chat.completions.parse(body);
  t.equal(parsed.choices[0].finish_reason, 'stop');
  const value = parsed.choices[0].message.parsed;
  t.equal(schemaErrors(recipe, value), undefined, JSON.stringify(value));
  const content = parsed.choices[0].message.content!;
  t.equal(parsed.usage?.completion_tokens, Math.ceil(content.length / 4), 'JSON text: 4 characters a token');

  const events = await rawEvents('/v1/chat/completions', body, chatHeaders);
  const deltas = events.map((e) => e.choices[0]?.delta?.content).filter((c) => typeof c === 'string' && c !== '');
  t.ok(deltas.length > 3, `streamed in ${deltas.length} content deltas`);
  t.equal(deltas.join(''), content, 'the same JSON text');
  const streamed = await openai.chat.completions.stream(body).finalChatCompletion();
  t.equal(streamed.choices[0].message.content, content, "the SDK's stream helper assembles the same text");
});

t.test('chat json_object: a JSON object, when the messages say "json"', async (t) => {
  const res = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Answer in JSON <<sim words=4>>' }], response_format: { type: 'json_object' } });
  const value = JSON.parse(res.choices[0].message.content!);
  t.equal(typeof value.answer, 'string');
  t.equal(value.answer.split(' ').length, 4, 'words= sets the length of the answer');
  await t.rejects(
    openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Answer' }], response_format: { type: 'json_object' } }),
    errorWith({ status: 400, param: 'messages', message: /must contain the word 'json'/ }),
    'the vendor wants the prompt to ask for JSON',
  );
});

t.test('chat: strict mode refuses a schema that is not closed or not all required', async (t) => {
  const loose = { ...recipe, additionalProperties: undefined };
  await t.rejects(
    openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'r', schema: loose, strict: true } } }),
    errorWith({ status: 400, param: 'response_format', message: /Invalid schema for response_format 'r': In context=\(\), 'additionalProperties' is required/ }),
  );
  const nested = structuredClone(recipe) as any;
  nested.properties.steps.items.required = ['order'];
  await t.rejects(
    openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'r', schema: nested, strict: true } } }),
    errorWith({ status: 400, message: /In context=\('properties', 'steps', 'items'\), 'required' .* Missing 'text'/ }),
  );
  const res = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'r', schema: { ...loose, required: ['title'] } } } });
  t.equal(schemaErrors({ ...loose, required: ['title'] }, JSON.parse(res.choices[0].message.content!)), undefined, 'without strict, any schema');
});

t.test('chat: a budget too small cuts the JSON with finish_reason length', async (t) => {
  const res = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], response_format: jsonSchema, max_completion_tokens: 10 });
  t.equal(res.choices[0].finish_reason, 'length');
  t.equal(res.choices[0].message.content?.length, 40);
  t.throws(() => JSON.parse(res.choices[0].message.content!), 'not valid JSON, as from the vendor');
  t.equal(res.usage?.completion_tokens, 10);
  await t.rejects(openai.chat.completions.parse({ model: 'm', messages: [{ role: 'user', content: 'x' }], response_format: jsonSchema, max_completion_tokens: 10 }), /length limit/i, 'the SDK reports it');
});

t.test('chat: tool calls first, the JSON answer after the tool results', async (t) => {
  const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } } }];
  const question: OpenAI.ChatCompletionMessageParam = { role: 'user', content: 'Look it up <<sim tools=1>>' };
  const first = await openai.chat.completions.create({ model: 'm', messages: [question], tools, response_format: jsonSchema });
  t.equal(first.choices[0].finish_reason, 'tool_calls');
  t.equal(first.choices[0].message.content, null, 'no JSON beside a call');
  const call = first.choices[0].message.tool_calls![0];
  const second = await openai.chat.completions.create({ model: 'm', messages: [question, first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'found' }], tools, response_format: jsonSchema });
  t.equal(second.choices[0].finish_reason, 'stop');
  t.equal(schemaErrors(recipe, JSON.parse(second.choices[0].message.content!)), undefined);
});

t.test('messages output_config.format: a text block of JSON that validates, whole and streamed', async (t) => {
  const body = { model: 'm', max_tokens: 2000, messages: [{ role: 'user' as const, content: 'A recipe please' }], output_config: { format: { type: 'json_schema' as const, schema: recipe } } };
  const msg = await anthropic.messages.create(body);
  t.equal(msg.stop_reason, 'end_turn');
  t.same(msg.content.map((b) => b.type), ['text']);
  const text = (msg.content[0] as Anthropic.TextBlock).text;
  t.equal(schemaErrors(recipe, JSON.parse(text)), undefined, text);
  t.equal(msg.usage.output_tokens, Math.ceil(text.length / 4));

  const events = await rawEvents('/v1/messages', body, messagesHeaders);
  const deltas = events.filter((e) => e.type === 'content_block_delta').map((e) => e.delta);
  t.ok(deltas.length > 3 && deltas.every((d) => d.type === 'text_delta'), `${deltas.length} text deltas`);
  t.equal(deltas.map((d) => d.text).join(''), text);
  const final = await anthropic.messages.stream(body).finalMessage();
  t.same(final.content, msg.content, 'the SDK assembles the same text');
});

t.test('messages: the beta output_format is honoured too; a format without a schema is refused', async (t) => {
  const res = await fetch(sim.url + '/v1/messages', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...messagesHeaders },
    body: JSON.stringify({ model: 'm', max_tokens: 2000, messages: [{ role: 'user', content: 'x' }], output_format: { type: 'json_schema', schema: recipe } }),
  });
  const msg = (await res.json()) as any;
  t.equal(schemaErrors(recipe, JSON.parse(msg.content[0].text)), undefined);
  await t.rejects(
    anthropic.messages.create({ model: 'm', max_tokens: 20, messages: [{ role: 'user', content: 'x' }], output_config: { format: { type: 'json_schema' } as any } }),
    errorWith({ status: 400, message: /output_config\.format\.schema/ }),
  );
});

t.test('messages: a forced tool call wins over the JSON text; after the result, JSON', async (t) => {
  const tools: Anthropic.Tool[] = [{ name: 'lookup', input_schema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } }];
  const output_config = { format: { type: 'json_schema' as const, schema: recipe } };
  const question: Anthropic.MessageParam = { role: 'user', content: 'Look it up' };
  const first = await anthropic.messages.create({ model: 'm', max_tokens: 2000, messages: [question], tools, tool_choice: { type: 'any' }, output_config });
  t.same(first.content.map((b) => b.type), ['tool_use']);
  const use = first.content[0] as Anthropic.ToolUseBlock;
  const second = await anthropic.messages.create({
    model: 'm',
    max_tokens: 2000,
    messages: [question, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'found' }] }],
    tools,
    output_config,
  });
  t.equal(second.stop_reason, 'end_turn');
  t.equal(schemaErrors(recipe, JSON.parse((second.content[0] as Anthropic.TextBlock).text)), undefined);
});
