// Issue 15, items 1 and 5, end to end with the official SDKs against the simulated vendors (which
// check requests as strictly as the real ones): tool fields the gateway does not know
// (eager_input_streaming, defer_loading, input_examples; a chat function's newer members) and PDF
// documents reach a same-format upstream unchanged, are dropped or converted on the way to the
// other format, and a model whose offers cannot take documents refuses them with a 400 in the
// client's format, before any hold or upstream call.
import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { pdfBase64 } from '../helpers/pdf.js';
import { PDF_PAGE_TOKENS } from '../../lib/tokens.js';

let gw: TestGateway;
t.before(async () => {
  gw = await startGateway({
    configure(cfg) {
      // A model whose only offer takes no documents, and one served only in the chat format.
      cfg.models.push({ id: 'test/nodocs', context_window: 100000, max_output_tokens: 4096 });
      cfg.models.push({ id: 'test/chatonly', context_window: 100000, max_output_tokens: 4096 });
      cfg.offers.push({ listing: 'test/nodocs@sim-messages', model: 'test/nodocs', provider: 'sim-messages', upstream_model: 'nodocs-up', price: { input: 1, output: 2 }, supports: { documents: false } });
      cfg.offers.push({ listing: 'test/chatonly@sim-chat', model: 'test/chatonly', provider: 'sim-chat', upstream_model: 'chatonly-up', price: { input: 1, output: 2 } });
    },
  });
});
t.teardown(() => gw.close());

const anthropic = () => new Anthropic({ baseURL: gw.url, apiKey: gw.apiKey, maxRetries: 0 });
const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.apiKey, maxRetries: 0 });
const upstream = () => gw.sim.received.at(-1)!;

const PAGES = 3;
const PDF = pdfBase64({ pages: PAGES, fanout: 2, objectStream: true });

/** As @ai-sdk/anthropic and newer SDKs send tools. */
const messagesTools = [
  {
    name: 'get_weather',
    description: 'Current weather',
    input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
    eager_input_streaming: true,
    defer_loading: false,
    input_examples: [{ city: 'Paris' }],
  },
];
const pdfBlock = { type: 'document' as const, source: { type: 'base64' as const, media_type: 'application/pdf' as const, data: PDF }, title: 'Report', cache_control: { type: 'ephemeral' as const } };
const messagesAsk: Anthropic.MessageParam[] = [{ role: 'user', content: [pdfBlock, { type: 'text', text: 'Summarize it <<sim words=4>>' }] }];

const chatTools = [
  { type: 'function' as const, function: { name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false, some_future_field: { a: 1 } } },
];
const filePart = { type: 'file' as const, file: { file_data: `data:application/pdf;base64,${PDF}`, filename: 'report.pdf' } };
const chatAsk: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: [filePart, { type: 'text', text: 'Summarize it <<sim words=4>>' }] }];

t.test('same format, messages: the tool fields and the PDF reach the upstream unchanged (a stream, as streamText sends it)', async (t) => {
  const stream = anthropic().messages.stream({ model: 'test/claude', max_tokens: 200, tools: messagesTools, messages: messagesAsk });
  const answer = await stream.finalMessage();
  t.equal(answer.model, 'test/claude');
  const up = upstream();
  t.equal(up.path, '/v1/messages');
  t.equal(up.body.model, 'claude-up', 'the messages offer served it');
  t.strictSame(up.body.tools, messagesTools, 'eager_input_streaming, defer_loading and input_examples as sent');
  t.strictSame(up.body.messages, messagesAsk, 'the document block as sent');
  t.ok(answer.usage.input_tokens > PAGES * 2000, `the vendor read the pages (${answer.usage.input_tokens} input tokens)`);
});

t.test('same format, chat: the function\'s newer members and the file part reach the upstream unchanged', async (t) => {
  const { data, response } = await openai()
    .chat.completions.create({ model: 'test/gpt', max_completion_tokens: 200, tools: chatTools, messages: chatAsk })
    .withResponse();
  t.equal(response.headers.get('x-service-listing'), 'test/gpt@sim-chat');
  t.equal(data.choices[0].message.content!.split(' ').length, 4);
  t.strictSame(upstream().body.tools, chatTools);
  t.strictSame(upstream().body.messages, chatAsk);
});

t.test('converted, messages client → chat upstream: unknown tool fields dropped, the PDF becomes a file part', async (t) => {
  const { data, response } = await anthropic()
    .messages.create({ model: 'test/gpt', max_tokens: 200, tools: messagesTools, messages: messagesAsk })
    .withResponse();
  t.equal(response.headers.get('x-service-listing'), 'test/gpt@sim-chat');
  t.equal(data.type, 'message');
  const up = upstream();
  t.equal(up.path, '/v1/chat/completions');
  t.strictSame(up.body.tools, [
    { type: 'function', function: { name: 'get_weather', parameters: messagesTools[0].input_schema, description: 'Current weather' } },
  ]);
  t.strictSame(up.body.messages, [
    {
      role: 'user',
      content: [
        { type: 'file', file: { filename: 'Report', file_data: `data:application/pdf;base64,${PDF}` }, cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Summarize it <<sim words=4>>' },
      ],
    },
  ]);
});

t.test('converted, chat client → messages upstream: unknown function members dropped, the file part becomes a document', async (t) => {
  const { data, response } = await openai()
    .chat.completions.create({ model: 'test/claude', max_completion_tokens: 200, tools: chatTools, messages: chatAsk })
    .withResponse();
  t.equal(response.headers.get('x-service-listing'), 'test/claude@sim-messages');
  t.equal(data.object, 'chat.completion');
  const up = upstream();
  t.equal(up.path, '/v1/messages');
  t.strictSame(up.body.tools, [{ name: 'get_weather', input_schema: chatTools[0].function.parameters, description: 'Current weather', strict: false }]);
  t.strictSame(up.body.messages, [
    {
      role: 'user',
      content: [
        { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF }, title: 'report.pdf' },
        { type: 'text', text: 'Summarize it <<sim words=4>>' },
      ],
    },
  ]);
});

t.test('a large PDF is held at its pages, not at the size of its base64 text', async (t) => {
  // 600 KB of base64: as text it would be some 400,000 tokens, over the context window.
  const big = pdfBase64({ pages: PAGES, padding: 450_000 });
  const r = await anthropic()
    .messages.create({ model: 'test/claude', max_tokens: 50, messages: [{ role: 'user', content: [{ ...pdfBlock, source: { ...pdfBlock.source, data: big } }, { type: 'text', text: 'Hi <<sim words=2>>' }] }] })
    .withResponse();
  await gw.gateway.requestFinished(r.response.headers.get('x-request-id')!);
  const row = await gw.store.history.get(r.response.headers.get('x-request-id')!);
  // test/claude's candidates: the highest input-side price is the chat offer's 4 $/M, the highest output 16 $/M.
  const held = (tokens: number) => tokens * 4000 + 50 * 16000;
  t.ok(row!.holdNano >= held(PAGES * PDF_PAGE_TOKENS) && row!.holdNano <= held(PAGES * PDF_PAGE_TOKENS + 100), `held ${row!.holdNano} nano-USD: ${PAGES} pages and a few tokens of text`);
  t.ok(row!.costNano > 0 && row!.costNano <= row!.holdNano, `charged ${row!.costNano}, within the hold`);
});

/** A request refused before any upstream call, hold or charge: its status and body. */
async function refused(t: Test, send: () => Promise<unknown>) {
  const balance = await gw.store.ledger.balance(gw.accountId);
  const calls = gw.sim.received.length;
  const err = (await send().then(
    () => undefined,
    (e) => e,
  )) as any;
  t.ok(err, 'refused');
  t.equal(err?.status, 400);
  t.equal(gw.sim.received.length, calls, 'no upstream call');
  t.same(await gw.store.ledger.balance(gw.accountId), balance, 'nothing held or charged');
  return err?.error;
}

t.test('a model whose offers take no documents: 400 in the client\'s format, naming the document', async (t) => {
  const msg = await refused(t, () => anthropic().messages.create({ model: 'test/nodocs', max_tokens: 50, messages: messagesAsk }));
  t.match(msg, {
    type: 'error',
    error: { type: 'invalid_request_error', message: 'No offer of model test/nodocs supports document input (PDF and text documents, file parts); remove it from the request.' },
  });
  const chat = await refused(t, () => openai().chat.completions.create({ model: 'test/nodocs', messages: chatAsk }));
  // The openai SDK's error carries the body's `error` object.
  t.match(chat, {
    type: 'invalid_request_error',
    code: 'feature_not_supported',
    param: 'messages[0].content[0]',
    message: /^No offer of model test\/nodocs supports document input/,
  });
  // Tools alone are fine there.
  const ok = await anthropic().messages.create({ model: 'test/nodocs', max_tokens: 50, tools: messagesTools, messages: [{ role: 'user', content: 'Hi <<sim words=2>>' }] });
  t.equal(ok.type, 'message');
  t.strictSame(upstream().body.tools, messagesTools);
});

t.test('a PDF by URL goes to a messages offer only; a model with none says so', async (t) => {
  const byUrl: Anthropic.MessageParam[] = [{ role: 'user', content: [{ type: 'document', source: { type: 'url', url: 'https://example.com/report.pdf' } }, { type: 'text', text: 'Summarize <<sim words=2>>' }] }];
  // test/gpt's cheapest offer speaks chat, which has no way to name a URL document: its messages offer serves it.
  const { response } = await anthropic().messages.create({ model: 'test/gpt', max_tokens: 50, messages: byUrl }).withResponse();
  t.equal(response.headers.get('x-service-listing'), 'test/gpt@sim-messages');
  t.strictSame(upstream().body.messages, byUrl);
  const err = await refused(t, () => anthropic().messages.create({ model: 'test/chatonly', max_tokens: 50, messages: byUrl }));
  t.match(err, {
    type: 'error',
    error: { type: 'invalid_request_error', message: /^No offer of model test\/chatonly can take a document given by URL \(messages\[0\]\.content\[0\]\.source\)/ },
  });
});

t.test('a chat file id goes to a chat offer only', async (t) => {
  const byId: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-abc' } }, { type: 'text', text: 'Summarize <<sim words=2>>' }] }];
  // test/claude's cheapest offer speaks the messages format, which cannot read the chat vendor's files.
  const { response } = await openai().chat.completions.create({ model: 'test/claude', max_completion_tokens: 50, messages: byId }).withResponse();
  t.equal(response.headers.get('x-service-listing'), 'test/claude@sim-chat');
  t.strictSame(upstream().body.messages, byId);
});
