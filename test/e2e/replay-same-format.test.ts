// Every recording of real vendor traffic (test/fixtures/replay) through the gateway to a client of the
// vendor's own format: the answer is the vendor's, event for event (only the model renamed), the
// upstream got the client's request, and the request is charged exactly the recorded usage, cache
// tokens included, at the offer's price. A vendor's error event after output reaches the client as
// it came, and the SDKs show its type.
import t from 'tap';
import http from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { TestGateway } from '../helpers/gateway.js';
import { checkInvariants } from '../helpers/invariants.js';
import {
  REPLAY_MODEL,
  REPLAY_PROVIDER_KEYS,
  historyRow,
  loadRecordings,
  parseSse,
  recordedAnswer,
  replayCost,
  startReplayGateway,
  startReplayUpstream,
  usageOf,
  type Recording,
  type ReplayUpstream,
} from '../helpers/replay.js';

const recordings = loadRecordings();
let up: ReplayUpstream;
let gw: TestGateway;
t.before(async () => {
  up = await startReplayUpstream();
  gw = await startReplayGateway(up);
});
t.teardown(async () => {
  await gw.close();
  await up.close();
});

const PATH = { messages: '/v1/messages', chat: '/v1/chat/completions' } as const;

interface Reply {
  status: number;
  requestId: string;
  listing: string | undefined;
  contentType: string;
  text: string;
}

function post(r: Recording, body: object): Promise<Reply> {
  const headers: Record<string, string> =
    r.format === 'messages' ? { 'x-api-key': gw.apiKey, 'anthropic-version': '2023-06-01' } : { authorization: `Bearer ${gw.apiKey}` };
  return new Promise((resolve, reject) => {
    const req = http.request(`${gw.url}${PATH[r.format]}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          requestId: String(res.headers['x-request-id']),
          listing: res.headers['x-service-listing'] as string | undefined,
          contentType: String(res.headers['content-type']),
          text,
        }),
      );
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const balance = async () => (await gw.store.ledger.balance(gw.accountId)).balance;

/** The recorded stream's events as the client must get them: only the model name differs. */
function expectedEvents(r: Recording, model: string) {
  return parseSse(r.body).map((e) => {
    if (r.format === 'chat') return { ...e, data: e.data.replace(/"model":"[^"]*"/, `"model":${JSON.stringify(model)}`) };
    if (e.event !== 'message_start') return e;
    const j = JSON.parse(e.data);
    j.message.model = model;
    return { ...e, data: JSON.stringify(j) };
  });
}

for (const r of recordings) {
  t.test(`${r.name} (${r.format}${r.stream ? ', stream' : ''}: ${r.features}) → a ${r.format} client`, async (t) => {
    up.serve(r);
    const model = REPLAY_MODEL[r.format];
    const recorded = recordedAnswer(r);
    const before = await balance();
    const sentBefore = up.received.length;
    const res = await post(r, { ...r.request, model });
    t.equal(res.status, 200);
    t.equal(res.listing, `${model}@replay`);

    // The upstream got the client's request, with the offer's model and the provider's key only.
    t.equal(up.received.length, sentBefore + 1, 'one upstream call');
    const got = up.received.at(-1)!;
    t.equal(got.path, PATH[r.format]);
    t.same(got.body.messages, r.request.messages, 'the messages as the client sent them');
    t.same(got.body.tools, r.request.tools, 'the tools as the client sent them');
    t.equal(got.body.model, r.format === 'messages' ? 'replay-messages-upstream' : 'replay-chat-upstream');
    if (r.format === 'messages') t.equal(got.headers['x-api-key'], REPLAY_PROVIDER_KEYS.messages);
    else t.equal(got.headers.authorization, `Bearer ${REPLAY_PROVIDER_KEYS.chat}`);
    t.notMatch(JSON.stringify(got.headers), gw.apiKey, "the client's key stays with the gateway");

    if (!r.stream) {
      t.match(res.contentType, /^application\/json/);
      t.same(JSON.parse(res.text), { ...JSON.parse(r.body.toString('utf8')), model }, 'the vendor answer, only the model renamed');
    } else {
      t.match(res.contentType, /^text\/event-stream/);
      t.same(parseSse(res.text), expectedEvents(r, model), 'the vendor stream event for event, only the model renamed');
    }

    // Money: exactly the recorded usage at the offer's prices; a broken stream, what was measured so far.
    const row = await historyRow(gw, res.requestId);
    const spent = before - (await balance());
    t.equal(row.listing, `${model}@replay`);
    if (recorded.error) {
      t.equal(row.status, 'error');
      t.equal(row.error, recorded.error.error.message, "the vendor's message is the request's error");
      if (recorded.usage) {
        const partial = usageOf(r.format, recorded.usage);
        t.same({ ...row.usage, output: partial.output }, partial, 'the usage reported before the error');
        t.ok(row.usage.output >= partial.output, `output: at least the reported ${partial.output} (${row.usage.output}, from the text streamed)`);
      } else {
        t.ok(row.usage.input > 0 && row.usage.output > 0, `no usage reported: input estimated (${row.usage.input}), output from the text streamed (${row.usage.output})`);
      }
      t.ok(row.costNano > 0, 'charged for what was produced');
    } else {
      t.equal(row.status, 'ok');
      t.same(row.usage, usageOf(r.format, recorded.usage), 'charged exactly the recorded usage, cache tokens included');
    }
    t.equal(row.costNano, replayCost(row.usage), 'each token class at its own price');
    t.equal(spent, row.costNano, 'the balance moved by exactly the charge');
  });
}

t.test('the SDKs show a vendor error event after output with its own type and message', async (t) => {
  const byName = (name: string) => recordings.find((r) => r.name === name)!;
  const anthropic = new Anthropic({ baseURL: gw.url, apiKey: gw.apiKey, maxRetries: 0 });
  const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.apiKey, maxRetries: 0 });

  const overloaded = byName('anthropic-overloaded-midstream');
  up.serve(overloaded);
  const texts: string[] = [];
  const stream = anthropic.messages.stream({ ...(overloaded.request as any), model: REPLAY_MODEL.messages });
  stream.on('text', (text) => texts.push(text));
  const err = await stream.finalMessage().catch((e) => e);
  t.type(err, Anthropic.APIError);
  t.match(err, { type: 'overloaded_error', error: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } });
  t.equal(err.apiMessage, 'Overloaded');
  t.equal(texts.join(''), recordedAnswer(overloaded).text, 'the text before the error reached the client');

  for (const [name, expected] of [
    ['openai-error-midstream', { type: 'server_error', code: null, message: 'The server had an error while processing your request. Sorry about that!' }],
    ['groq-error-midstream', { type: 'invalid_request_error', code: 'tool_use_failed', message: /^Tool call validation failed/ }],
  ] as const) {
    const r = byName(name);
    up.serve(r);
    const chunks = await openai.chat.completions.create({ ...(r.request as OpenAI.ChatCompletionCreateParamsStreaming), model: REPLAY_MODEL.chat, stream: true });
    let seen = 0;
    const e = await (async () => {
      for await (const _ of chunks) seen++;
    })().catch((e) => e);
    t.type(e, OpenAI.APIError, name);
    t.match(e, expected, `${name}: the vendor's type, code and message`);
    t.ok(seen > 1, `${name}: ${seen} chunks arrived before the error`);
  }
});

t.test('money invariants hold after the whole replay', async (t) => {
  t.same(await checkInvariants(gw.store, { noOpenHolds: true }), []);
});
