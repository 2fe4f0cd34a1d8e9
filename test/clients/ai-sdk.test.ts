// Client matrix: the Vercel AI SDK (`ai`) with its two providers that can reach the gateway:
// `@ai-sdk/openai-compatible` on the chat route and `@ai-sdk/anthropic` on the messages route, each
// on its same-format path and its converted path. The AI SDK has no models API: not tested here.
import t from 'tap';
import { APICallError, Output, generateText, jsonSchema, stepCountIs, streamText, tool, type LanguageModel, type ToolSet } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { createAnthropic } from '@ai-sdk/anthropic';
import { TOOLS, TWO_TOOL_CALLS, UPSTREAM_FAILS, WEATHER_SCHEMA, pathsOf, rejection, startClientGateway, toolResult, upstreamBodies, weatherSchemaErrors, type ClientGateway, type Route } from './harness.js';

let gw: ClientGateway;
t.before(async () => {
  gw = await startClientGateway();
});
t.teardown(() => gw.close());

/** The README's settings: both providers take the base URL with `/v1`. */
function modelFor(route: Route, model: string, apiKey = gw.apiKey): LanguageModel {
  if (route === 'chat') {
    return createOpenAICompatible({ name: 'gateway', baseURL: `${gw.url}/v1`, apiKey, includeUsage: true, supportsStructuredOutputs: true })(model);
  }
  return createAnthropic({ baseURL: `${gw.url}/v1`, apiKey })(model);
}

/** Reasoning on: each provider has its own option for it. */
const reasoningOptions = (route: Route) =>
  route === 'chat' ? { gateway: { reasoningEffort: 'low' } } : { anthropic: { thinking: { type: 'enabled', budgetTokens: 1024 } } };

/** The two tools, with `execute`, recording the calls they ran. */
function toolSet(ran: string[]): ToolSet {
  return Object.fromEntries(
    Object.entries(TOOLS).map(([name, def]) => [
      name,
      tool({
        description: def.description,
        inputSchema: jsonSchema<{ city: string }>(def.parameters as any),
        execute: async () => {
          ran.push(name);
          return toolResult(name);
        },
      }),
    ]),
  );
}

const ROUTES: { route: Route; provider: string }[] = [
  { route: 'chat', provider: '@ai-sdk/openai-compatible' },
  { route: 'messages', provider: '@ai-sdk/anthropic' },
];

for (const { route, provider } of ROUTES) {
  for (const path of pathsOf(route)) {
    t.test(`${provider}, ${path.name} (${path.model})`, async (t) => {
      const model = () => modelFor(route, path.model);

      t.test('text (generateText)', async (t) => {
        const mark = gw.mark();
        const r = await generateText({ model: model(), maxOutputTokens: 200, maxRetries: 0, prompt: 'Say hello <<sim words=5>>' });
        upstreamBodies(t, gw, mark, path.upstreamPath);
        t.equal(r.text.split(' ').length, 5);
        t.equal(r.finishReason, 'stop');
        t.equal(r.usage.outputTokens, 5);
        t.ok((r.usage.inputTokens ?? 0) > 0);
      });

      t.test('streaming (streamText)', async (t) => {
        const mark = gw.mark();
        const r = streamText({ model: model(), maxOutputTokens: 200, maxRetries: 0, prompt: 'Count <<sim words=6>>', onError: () => {} });
        let text = '';
        for await (const delta of r.textStream) text += delta;
        upstreamBodies(t, gw, mark, path.upstreamPath);
        t.equal(text.split(' ').length, 6);
        t.equal(await r.finishReason, 'stop');
        const usage = await r.usage;
        t.equal(usage.outputTokens, 6);
        t.ok((usage.inputTokens ?? 0) > 0);
      });

      t.test('tool round trip with two parallel calls (streamText, two steps)', async (t) => {
        const ran: string[] = [];
        const mark = gw.mark();
        let error: unknown;
        const r = streamText({
          model: model(),
          maxOutputTokens: 500,
          maxRetries: 0,
          tools: toolSet(ran),
          stopWhen: stepCountIs(3),
          prompt: `Weather and time in Paris? ${TWO_TOOL_CALLS}`,
          onError: ({ error: e }) => void (error = e),
        });
        await r.consumeStream();
        t.equal(error, undefined, `no stream error${error ? `: ${(error as Error).message}` : ''}`);
        const steps = await r.steps;
        t.strictSame(ran.sort(), ['get_time', 'get_weather'], 'both tools ran once');
        t.strictSame(steps[0]?.toolCalls.map((c) => [c.toolName, c.input]), [
          ['get_weather', { city: 'value-city' }],
          ['get_time', { city: 'value-city' }],
        ]);
        t.equal(steps.length, 2, 'two steps: the calls, then the answer');
        t.equal(await r.finishReason, 'stop', 'the tool results end the loop');
        t.ok(await r.text, 'a text answer');
        upstreamBodies(t, gw, mark, path.upstreamPath, steps.length);
      });

      t.test('structured output (Output.object)', async (t) => {
        const mark = gw.mark();
        const r = await generateText({
          model: model(),
          maxOutputTokens: 500,
          maxRetries: 0,
          output: Output.object({ schema: jsonSchema(WEATHER_SCHEMA as any) }),
          prompt: 'The weather in Paris, as JSON.',
        }).catch((e: unknown) => e as Error);
        upstreamBodies(t, gw, mark, path.upstreamPath);
        if (r instanceof Error) return t.fail(`${r.name}: ${r.message}`);
        t.equal(weatherSchemaErrors(r.output), null, 'the output validates against the schema');
      });

      t.test('reasoning round trip (reasoning, then a tool step that sends it back)', async (t) => {
        const mark = gw.mark();
        const r = await generateText({
          model: model(),
          maxOutputTokens: 4000,
          maxRetries: 0,
          providerOptions: reasoningOptions(route) as any,
          tools: toolSet([]),
          stopWhen: stepCountIs(2),
          prompt: `Think, then call both tools. ${TWO_TOOL_CALLS}`,
        });
        t.ok(r.steps[0]?.reasoningText, 'the reasoning text arrived');
        const [, second] = upstreamBodies(t, gw, mark, path.upstreamPath, 2);
        t.equal(r.steps.length, 2, 'the second step was accepted');
        const assistant = second?.messages?.find((m: any) => m.role === 'assistant');
        if (route === 'messages' && path.upstreamPath === '/v1/messages') {
          t.match(assistant?.content?.[0], { type: 'thinking', thinking: r.steps[0]?.reasoningText, signature: /.+/ }, 'the signed thinking went back');
        } else if (route === 'messages') {
          t.match(assistant?.reasoning_details, [{ type: 'thinking', signature: /.+/ }], 'the signature went back as reasoning_details');
        } else if (path.upstreamPath === '/v1/chat/completions') {
          t.equal(assistant?.reasoning_content, r.steps[0]?.reasoningText, 'the provider sends the reasoning back as reasoning_content');
        } else {
          // The provider keeps no signature: the unsigned reasoning cannot become a thinking block.
          t.notOk(assistant?.content?.some?.((b: any) => b.type === 'thinking'), 'no unsigned thinking block reached the messages upstream');
        }
      });

      t.test('failure answers, as the SDK surfaces them (APICallError)', async (t) => {
        const ask = (apiKey: string, prompt = 'Hi <<sim words=3>>') =>
          generateText({ model: modelFor(route, path.model, apiKey), maxOutputTokens: 1000, maxRetries: 0, prompt });
        const cases: [number, string, () => Promise<string>, boolean][] = [
          [401, 'Hi', async () => gw.wrongKey, false],
          [402, 'Hi', async () => gw.poorKey, false],
          [429, 'Hi', () => gw.keyOverItsLimit(), true],
          [503, `Hi ${UPSTREAM_FAILS}`, async () => gw.apiKey, true],
        ];
        for (const [status, prompt, key, retryable] of cases) {
          const e = await rejection(ask(await key(), prompt));
          t.ok(APICallError.isInstance(e), `${status}: APICallError`);
          t.equal(e.statusCode, status, `${status}: statusCode`);
          t.equal(e.isRetryable, retryable, `${status}: isRetryable ${retryable} (with retries on, the SDK would retry it)`);
          t.ok(e.message && !/^(Bad Request|Unauthorized|Payment Required)$/.test(e.message), `${status}: the gateway's message is the error's: ${e.message}`);
          if (status === 429 || status === 503) t.ok(Number(e.responseHeaders?.['retry-after']) > 0, `${status}: Retry-After reaches the SDK`);
        }
      });
    });
  }
}
