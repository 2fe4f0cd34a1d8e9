// Every recording of real vendor traffic (test/fixtures/replay) through the gateway to a client of the
// other format, with the official SDKs: a messages-format recording to the `openai` SDK, a chat
// recording to `@anthropic-ai/sdk`. The client gets the vendor's content, tool calls (ids, names,
// arguments), thinking with its signatures, the mapped stop reason and the usage mapped as
// conversion.md says; the request is charged exactly the recorded usage, cache tokens included. A
// vendor's error event after output reaches the client as the nearest error type of its format, with
// the vendor's message. A converted stream's message_start carries the gateway's input estimate.
//
// The client's request is the recorded request converted to the client's format by the gateway's own
// request converters: the gateway converts it back for the upstream, which answers with the recording.
import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { WireFormat } from '../../lib/config-types.js';
import { chatToMessagesRequest } from '../../plugins/format-transform/chat-to-messages.js';
import { messagesToChatRequest } from '../../plugins/format-transform/messages-to-chat.js';
import { checkInvariants } from '../helpers/invariants.js';
import {
  REPLAY_MODEL,
  chatAnswer,
  chatStreamAnswer,
  balanceOf,
  checkCharge,
  loadRecordings,
  messagesAnswer,
  messagesStreamAnswer,
  recordedAnswer,
  useReplay,
  usageOf,
  type Answer,
  type Recording,
} from '../helpers/replay.js';

const recordings = loadRecordings();
const replay = useReplay(t);
let anthropic: Anthropic;
let openai: OpenAI;
t.before(async () => {
  anthropic = new Anthropic({ baseURL: replay.gw.url, apiKey: replay.gw.apiKey, maxRetries: 0 });
  openai = new OpenAI({ baseURL: `${replay.gw.url}/v1`, apiKey: replay.gw.apiKey, maxRetries: 0 });
});

// conversion.md: finish_reason ⇄ stop_reason.
const FINISH_OF_STOP: Record<string, string> = { end_turn: 'stop', stop_sequence: 'stop', pause_turn: 'stop', max_tokens: 'length', tool_use: 'tool_calls', refusal: 'content_filter' };
const STOP_OF_FINISH: Record<string, string> = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use', content_filter: 'refusal' };

/** The recorded answer as a client of the other format must see it (conversion.md's mapping). */
function converted(r: Recording, a: Answer): { text: string; thinking: string; signatures: string[]; toolCalls: Answer['toolCalls']; stop: string | null } {
  const tools = a.toolCalls.length > 0;
  if (r.format === 'messages') {
    return { text: a.text, thinking: a.thinking, signatures: a.signatures, toolCalls: a.toolCalls, stop: a.stop && (tools ? 'tool_calls' : FINISH_OF_STOP[a.stop]) };
  }
  // A chat refusal is text to a messages client; reasoning without signatures gets "".
  return { text: a.text + a.refusal, thinking: a.thinking, signatures: a.thinking ? [''] : [], toolCalls: a.toolCalls, stop: a.stop && (tools ? 'tool_use' : STOP_OF_FINISH[a.stop]) };
}

/** The recorded usage in the client's format's fields (conversion.md's usage mapping). */
function convertedUsage(r: Recording, u: any): Record<string, any> {
  const g = usageOf(r.format, u);
  if (r.format === 'messages') {
    const prompt = g.input + g.cacheRead + g.cacheWrite;
    const usage: Record<string, any> = { prompt_tokens: prompt, completion_tokens: g.output, total_tokens: prompt + g.output, prompt_tokens_details: { cached_tokens: g.cacheRead } };
    // The vendor's count of thinking tokens, where it sends one, under the chat format's name.
    const thinking = u.output_tokens_details?.thinking_tokens;
    if (thinking !== undefined) usage.completion_tokens_details = { reasoning_tokens: thinking };
    return usage;
  }
  return { input_tokens: g.input, output_tokens: g.output, cache_read_input_tokens: g.cacheRead, cache_creation_input_tokens: 0 };
}

/** The recorded request in the client's (the other) format. */
function clientRequest(r: Recording): any {
  const client: WireFormat = r.format === 'messages' ? 'chat' : 'messages';
  const body = { ...r.request, model: REPLAY_MODEL[r.format] };
  const req =
    client === 'chat'
      ? messagesToChatRequest(body, { stream: r.stream })
      : chatToMessagesRequest(body, { defaultMaxTokens: 4096, stream: r.stream });
  if (!r.stream) delete req.stream;
  return req;
}

/** A chat client's run: the answer taken apart, the request id, and the SDK's error if one ended it. */
async function chatRun(r: Recording, body: any): Promise<{ answer: Answer; requestId: string; error?: any; firstEvent?: any }> {
  if (!r.stream) {
    const { data, response } = await openai.chat.completions.create(body as OpenAI.ChatCompletionCreateParamsNonStreaming).withResponse();
    return { answer: chatAnswer(data), requestId: response.headers.get('x-request-id')! };
  }
  const { data, response } = await openai.chat.completions.create({ ...(body as OpenAI.ChatCompletionCreateParamsStreaming), stream: true }).withResponse();
  const chunks: any[] = [];
  let error: any;
  try {
    for await (const c of data) chunks.push(c);
  } catch (e) {
    error = e;
  }
  return { answer: chatStreamAnswer(chunks), requestId: response.headers.get('x-request-id')!, error, firstEvent: chunks[0] };
}

/** A messages client's run, through the SDK's MessageStream (which checks the event order) for streams. */
async function messagesRun(r: Recording, body: any): Promise<{ answer: Answer; requestId: string; error?: any; firstEvent?: any; final?: Answer }> {
  if (!r.stream) {
    const { data, response } = await anthropic.messages.create(body).withResponse();
    return { answer: messagesAnswer(data), requestId: response.headers.get('x-request-id')! };
  }
  const stream = anthropic.messages.stream(body);
  const events: any[] = [];
  // A copy: the SDK builds its message from message_start's object and updates it with later events.
  stream.on('streamEvent', (e) => events.push(structuredClone(e)));
  let error: any;
  let final: Answer | undefined;
  try {
    final = messagesAnswer(await stream.finalMessage());
  } catch (e) {
    error = e;
  }
  const { response } = await stream.withResponse();
  return { answer: messagesStreamAnswer(events), requestId: response.headers.get('x-request-id')!, error, firstEvent: events[0], final };
}

for (const r of recordings) {
  const client: WireFormat = r.format === 'messages' ? 'chat' : 'messages';
  t.test(`${r.name} (${r.format}${r.stream ? ', stream' : ''}: ${r.features}) → a ${client} client`, async (t) => {
    replay.up.serve(r);
    const recorded = recordedAnswer(r);
    const before = await balanceOf(replay.gw);
    const run = client === 'chat' ? await chatRun(r, clientRequest(r)) : await messagesRun(r, clientRequest(r));
    t.equal(replay.up.received.at(-1)!.path, r.format === 'messages' ? '/v1/messages' : '/v1/chat/completions', 'the upstream was asked in its own format');

    const want = converted(r, recorded);
    const got = run.answer;
    t.same({ text: got.text, thinking: got.thinking, signatures: got.signatures, toolCalls: got.toolCalls }, { text: want.text, thinking: want.thinking, signatures: want.signatures, toolCalls: want.toolCalls }, 'content, thinking with its signatures, tool calls');
    if ('final' in run && run.final) t.same(run.final, got, "the SDK's final message says the same as the events");

    if (recorded.error) {
      // A vendor error after output: the nearest type of the client's format, the vendor's message.
      const message = recorded.error.error.message;
      t.type(run.error, client === 'chat' ? OpenAI.APIError : Anthropic.APIError);
      if (client === 'chat') t.match(run.error, { type: r.name === 'anthropic-overloaded-midstream' ? 'service_unavailable' : String, message });
      else t.match(run.error, { type: r.name === 'groq-error-midstream' ? 'invalid_request_error' : 'overloaded_error', apiMessage: message });
      t.equal(got.stop, null, 'no made-up ending');
    } else {
      t.equal(run.error, undefined, 'no error');
      t.equal(got.stop, want.stop, `stop: ${recorded.stop} → ${want.stop}`);
      t.same(got.usage, convertedUsage(r, recorded.usage), 'the usage, mapped');
    }
    if (r.stream && client === 'messages') {
      // Item 7: a chat upstream reports usage at the end only; message_start carries the estimate.
      const start = run.firstEvent;
      t.equal(start?.type, 'message_start');
      t.ok(start.message.usage.input_tokens > 0, `message_start: input_tokens ${start.message.usage.input_tokens} (the gateway's estimate), not 0`);
    }

    await checkCharge(t, replay.gw, r, run.requestId, before);
  });
}

t.test('money invariants hold after the whole replay', async (t) => {
  t.same(await checkInvariants(replay.gw.store, { noOpenHolds: true }), []);
});
