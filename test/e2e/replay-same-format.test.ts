// Every recording of real vendor traffic (test/fixtures/replay) through the gateway to a client of the
// vendor's own format: the answer is the vendor's, event for event (only the model renamed), the
// upstream got the client's request, and the request is charged exactly the recorded usage, cache
// tokens included, at the offer's price. A vendor's error event after output reaches the client as
// it came, and the SDKs show its type.
import t from 'tap';
import http from 'node:http';
import { readdirSync } from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { checkInvariants } from '../helpers/invariants.js';
import {
  REPLAY_MODEL,
  REPLAY_PROVIDER_KEYS,
  balanceOf,
  checkCharge,
  loadRecordings,
  parseSse,
  recordedAnswer,
  useReplay,
  type Recording,
} from '../helpers/replay.js';

const recordings = loadRecordings();
const replay = useReplay(t);

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
    r.format === 'messages' ? { 'x-api-key': replay.gw.apiKey, 'anthropic-version': '2023-06-01' } : { authorization: `Bearer ${replay.gw.apiKey}` };
  return new Promise((resolve, reject) => {
    const req = http.request(`${replay.gw.url}${PATH[r.format]}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' } }, (res) => {
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

t.test('every recording in the folder is in index.json, so every one is replayed', async (t) => {
  const listed = recordings.flatMap((r) => [r.bodyFile, r.requestFile]);
  const files = readdirSync(new URL('../fixtures/replay/', import.meta.url)).filter((f) => f !== 'index.json' && f !== 'PROVENANCE.md');
  t.same(files.sort(), listed.sort());
  t.equal(recordings.length, 27, 'the 27 recordings of the shared fixtures');
});

for (const r of recordings) {
  t.test(`${r.name} (${r.format}${r.stream ? ', stream' : ''}: ${r.features}) → a ${r.format} client`, async (t) => {
    replay.up.serve(r);
    const model = REPLAY_MODEL[r.format];
    const before = await balanceOf(replay.gw);
    const sentBefore = replay.up.received.length;
    const res = await post(r, { ...r.request, model });
    t.equal(res.status, 200);
    t.equal(res.listing, `${model}@replay`);

    // The upstream got the client's request, with the offer's model and the provider's key only.
    t.equal(replay.up.received.length, sentBefore + 1, 'one upstream call');
    const got = replay.up.received.at(-1)!;
    t.equal(got.path, PATH[r.format]);
    t.same(got.body.messages, r.request.messages, 'the messages as the client sent them');
    t.same(got.body.tools, r.request.tools, 'the tools as the client sent them');
    t.equal(got.body.model, r.format === 'messages' ? 'replay-messages-upstream' : 'replay-chat-upstream');
    if (r.format === 'messages') t.equal(got.headers['x-api-key'], REPLAY_PROVIDER_KEYS.messages);
    else t.equal(got.headers.authorization, `Bearer ${REPLAY_PROVIDER_KEYS.chat}`);
    t.notMatch(JSON.stringify(got.headers), replay.gw.apiKey, "the client's key stays with the gateway");

    if (!r.stream) {
      t.match(res.contentType, /^application\/json/);
      t.same(JSON.parse(res.text), { ...JSON.parse(r.body.toString('utf8')), model }, 'the vendor answer, only the model renamed');
      // Byte for byte: the vendor's own text (its spacing, key order, number spelling), not serialized again.
      const recorded = r.body.toString('utf8');
      t.equal(res.text, recorded.replace(/("model"\s*:\s*)"[^"]*"/, `$1${JSON.stringify(model)}`), 'the vendor text itself, only the model renamed');
    } else {
      t.match(res.contentType, /^text\/event-stream/);
      t.same(parseSse(res.text), expectedEvents(r, model), 'the vendor stream event for event, only the model renamed');
    }

    await checkCharge(t, replay.gw, r, res.requestId, before);
  });
}

t.test("a same-format stream's text deltas reach the client without being parsed", async (t) => {
  for (const name of ['anthropic-cache-read-stream', 'openai-length-stream']) {
    const r = recordings.find((r) => r.name === name)!;
    // The vendor's text deltas, found by their parse here (not by the gateway's pattern).
    const deltas = new Set(
      parseSse(r.body)
        .map((e) => e.data)
        .filter((data) => {
          if (data === '[DONE]') return false;
          const j = JSON.parse(data);
          return r.format === 'messages' ? j.delta?.type === 'text_delta' : j.choices?.length === 1 && Object.keys(j.choices[0].delta).join() === 'content';
        }),
    );
    replay.up.serve(r);
    const parse = JSON.parse;
    let parsed = 0;
    JSON.parse = (text: string, reviver?: any) => {
      if (deltas.has(text)) parsed++;
      return parse(text, reviver);
    };
    let res: Reply;
    try {
      res = await post(r, { ...r.request, model: REPLAY_MODEL[r.format] });
    } finally {
      JSON.parse = parse;
    }
    t.equal(res.status, 200);
    t.ok(deltas.size >= 30, `${name}: ${deltas.size} text deltas`);
    t.equal(parsed, 0, `${name}: none parsed by the gateway`);
    t.same(parseSse(res.text), expectedEvents(r, REPLAY_MODEL[r.format]), 'and the stream is the vendor’s, only the model renamed');
  }
});

t.test('the SDKs show a vendor error event after output with its own type and message', async (t) => {
  const byName = (name: string) => recordings.find((r) => r.name === name)!;
  const anthropic = new Anthropic({ baseURL: replay.gw.url, apiKey: replay.gw.apiKey, maxRetries: 0 });
  const openai = new OpenAI({ baseURL: `${replay.gw.url}/v1`, apiKey: replay.gw.apiKey, maxRetries: 0 });

  const overloaded = byName('anthropic-overloaded-midstream');
  replay.up.serve(overloaded);
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
    replay.up.serve(r);
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
  t.same(await checkInvariants(replay.gw.store, { noOpenHolds: true }), []);
});
