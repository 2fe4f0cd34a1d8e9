// Client matrix: LangChain JS, `@langchain/openai` (ChatOpenAI, chat route) and `@langchain/anthropic`
// (ChatAnthropic, messages route), each on its same-format path and its converted path. LangChain's
// chat models have no models API: not tested here.
import t from 'tap';
import { ChatOpenAI } from '@langchain/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import { AIMessage, AIMessageChunk, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { TOOLS, TWO_TOOL_CALLS, UPSTREAM_FAILS, WEATHER_SCHEMA, pathsOf, rejection, startClientGateway, toolResult, upstreamBodies, weatherSchemaErrors, type ClientGateway, type Route } from './harness.js';

let gw: ClientGateway;
t.before(async () => {
  gw = await startClientGateway();
});
t.teardown(() => gw.close());

interface Options {
  apiKey?: string;
  maxTokens?: number;
  reasoning?: boolean;
}

/** The README's settings: ChatOpenAI takes the base URL with `/v1`, ChatAnthropic the gateway's root. */
function modelFor(route: Route, model: string, o: Options = {}): BaseChatModel {
  const apiKey = o.apiKey ?? gw.apiKey;
  const maxTokens = o.maxTokens ?? 500;
  if (route === 'chat') {
    // ChatOpenAI sends its `reasoning` option only for OpenAI's own model names (o*, gpt-5*): for the
    // gateway's ids the effort goes in modelKwargs.
    return new ChatOpenAI({ model, apiKey, configuration: { baseURL: `${gw.url}/v1` }, maxTokens, maxRetries: 0, ...(o.reasoning ? { modelKwargs: { reasoning_effort: 'low' } } : {}) });
  }
  return new ChatAnthropic({ model, apiKey, anthropicApiUrl: gw.url, maxTokens, maxRetries: 0, ...(o.reasoning ? { thinking: { type: 'enabled', budget_tokens: 1024 } } : {}) });
}

const tools = Object.entries(TOOLS).map(([name, def]) => ({ type: 'function' as const, function: { name, description: def.description, parameters: def.parameters } }));

const ROUTES: { route: Route; client: string }[] = [
  { route: 'chat', client: 'ChatOpenAI' },
  { route: 'messages', client: 'ChatAnthropic' },
];

/** Answers each tool call of `reply` as the application would. */
const toolMessages = (reply: AIMessage) => (reply.tool_calls ?? []).map((c) => new ToolMessage({ tool_call_id: c.id!, content: toolResult(c.name) }));

for (const { route, client } of ROUTES) {
  for (const path of pathsOf(route)) {
    t.test(`${client}, ${path.name} (${path.model})`, async (t) => {
      t.test('text (invoke)', async (t) => {
        const mark = gw.mark();
        const r = await modelFor(route, path.model).invoke('Say hello <<sim words=5>>');
        upstreamBodies(t, gw, mark, path.upstreamPath);
        t.equal(String(r.content).split(' ').length, 5);
        t.equal(r.usage_metadata?.output_tokens, 5);
        t.ok((r.usage_metadata?.input_tokens ?? 0) > 0);
      });

      t.test('streaming (stream; usage summed over the chunks)', async (t) => {
        const mark = gw.mark();
        let whole: AIMessageChunk | undefined;
        for await (const chunk of await modelFor(route, path.model).stream('Count <<sim words=6>>')) whole = whole ? whole.concat(chunk) : chunk;
        upstreamBodies(t, gw, mark, path.upstreamPath);
        t.equal(String(whole?.content).split(' ').length, 6);
        // ChatAnthropic adds message_start's output_tokens (the vendor says 1 there) to message_delta's.
        const output = whole?.usage_metadata?.output_tokens;
        t.ok(output === 6 || (route === 'messages' && output === 7), `output tokens (got ${output})`);
        t.ok((whole?.usage_metadata?.input_tokens ?? 0) > 0, `input tokens seen by a per-chunk reader (got ${whole?.usage_metadata?.input_tokens})`);
      });

      t.test('tool round trip with two parallel calls (bindTools)', async (t) => {
        const model = modelFor(route, path.model).bindTools!(tools);
        const history: BaseMessage[] = [new HumanMessage(`Weather and time in Paris? ${TWO_TOOL_CALLS}`)];
        const first = await model.invoke(history);
        t.strictSame(first.tool_calls?.map((c) => [c.name, c.args]), [
          ['get_weather', { city: 'value-city' }],
          ['get_time', { city: 'value-city' }],
        ]);
        history.push(first, ...toolMessages(first));
        const mark = gw.mark();
        const second = await model.invoke(history);
        upstreamBodies(t, gw, mark, path.upstreamPath);
        t.equal(second.tool_calls?.length ?? 0, 0, 'the tool results end the loop: no new tool calls');
        t.ok(second.text, 'a text answer');
      });

      t.test('structured output (withStructuredOutput, the default method)', async (t) => {
        const mark = gw.mark();
        const r = await modelFor(route, path.model)
          .withStructuredOutput(WEATHER_SCHEMA as any, { name: 'weather' })
          .invoke('The weather in Paris, as JSON.')
          .catch((e: unknown) => e as Error);
        upstreamBodies(t, gw, mark, path.upstreamPath);
        if (r instanceof Error) return t.fail(`${r.name}: ${r.message}`);
        t.equal(weatherSchemaErrors(r), null, 'the result validates against the schema');
      });

      t.test('reasoning round trip (reasoning, tool calls, the reply sent back)', async (t) => {
        const model = modelFor(route, path.model, { maxTokens: 4000, reasoning: true }).bindTools!(tools);
        const history: BaseMessage[] = [new HumanMessage(`Think, then call both tools. ${TWO_TOOL_CALLS}`)];
        const first = await model.invoke(history);
        t.equal(first.tool_calls?.length, 2);
        history.push(first, ...toolMessages(first));
        const mark = gw.mark();
        await model.invoke(history);
        const [sent] = upstreamBodies(t, gw, mark, path.upstreamPath);
        const assistant = sent?.messages?.find((m: any) => m.role === 'assistant');
        if (route === 'messages') {
          const thinking = (first.content as any[]).find((b) => b.type === 'thinking');
          t.match(thinking, { thinking: /\w/, signature: /.+/ }, 'a signed thinking block arrived');
          if (path.upstreamPath === '/v1/messages') t.match(assistant?.content?.[0], { type: 'thinking', signature: thinking?.signature }, 'and went back unchanged');
          else t.match(assistant?.reasoning_details, [{ type: 'thinking', signature: thinking?.signature }], 'and went back as reasoning_details');
        } else {
          // ChatOpenAI keeps the reasoning text (additional_kwargs.reasoning_content) but sends none back.
          t.ok(first.additional_kwargs.reasoning_content, 'the reasoning text arrived');
          t.notOk(assistant?.content?.some?.((b: any) => b.type === 'thinking'), 'nothing unsigned became a thinking block');
        }
      });

      t.test('failure answers, as LangChain surfaces them', async (t) => {
        const ask = (apiKey: string, prompt = 'Hi <<sim words=3>>') => modelFor(route, path.model, { apiKey, maxTokens: 1000 }).invoke(prompt);
        const cases: [number, string, () => Promise<string>][] = [
          [401, 'Hi', async () => gw.wrongKey],
          [402, 'Hi', async () => gw.poorKey],
          [429, 'Hi', () => gw.keyOverItsLimit()],
          [503, `Hi ${UPSTREAM_FAILS}`, async () => gw.apiKey],
        ];
        for (const [status, prompt, key] of cases) {
          const e = await rejection(ask(await key(), prompt));
          t.equal(e.status, status, `${status}: the error's status (${e.constructor?.name}: ${e.message})`);
          if (status === 429 || status === 503) t.ok(Number(e.headers?.get?.('retry-after')) > 0, `${status}: Retry-After reaches the application`);
        }
      });
    });
  }
}
