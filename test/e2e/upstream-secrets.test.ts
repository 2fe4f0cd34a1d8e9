// An upstream that echoes the request headers it received (the provider's key among them) in every
// kind of error it can give. Nothing of the key may reach the client, the history row or the log.
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const PROVIDER_KEY = 'sk-ant-api03-' + 'Zq7Xv2Lm9Pw4Rt6Yu8Io1As3Df5Gh0Jk'.repeat(2);

let reached = 0;

/** How the echoing upstream answers, chosen by the prompt text. */
function echoUpstream(): http.Server {
  return http.createServer((req, res) => {
    reached++;
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const echoed = JSON.stringify(req.headers);
      const mode = /mode:(\w+)/.exec(body)?.[1];
      const error = { type: 'error', error: { type: 'invalid_request_error', message: `bad request, headers were ${echoed}` } };
      const sse = (events: object[]) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const e of events) res.write(`event: ${(e as any).type}\ndata: ${JSON.stringify(e)}\n\n`);
        res.end();
      };
      const start = { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'x', content: [], usage: { input_tokens: 5, output_tokens: 1 } } };
      switch (mode) {
        case 'status401':
          res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ ...error, error: { type: 'authentication_error', message: `invalid x-api-key ${req.headers['x-api-key']}` } }));
          return;
        case 'status400':
          res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify(error));
          return;
        case 'masked':
          // OpenAI-style: a masked fragment of the key.
          res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `Incorrect API key provided: ${PROVIDER_KEY.slice(0, 20)}****${PROVIDER_KEY.slice(-12)}` } }));
          return;
        case 'body200':
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(error));
          return;
        case 'contentType':
          res.writeHead(200, { 'content-type': `text/plain; key=${req.headers['x-api-key']}` }).end('x');
          return;
        case 'eventBefore':
          return sse([start, error]);
        case 'eventAfter':
          return sse([start, { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } }, error]);
        default:
          res.writeHead(500).end(echoed);
      }
    });
  });
}

let gw: TestGateway;
let upstream: http.Server;
const logged: string[] = [];
t.before(async () => {
  upstream = echoUpstream();
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const port = (upstream.address() as AddressInfo).port;
  gw = await startGateway({
    log: (level, msg, fields) => void logged.push(JSON.stringify({ level, msg, fields }, (_k, v) => (v instanceof Error ? { message: v.message, stack: v.stack } : v))),
    configure(c) {
      c.breaker = { failure_threshold: 1_000_000, cooldown_ms: 1 }; // every request must reach the upstream
      c.providers.push({ id: 'echo', format: 'messages', base_url: `http://127.0.0.1:${port}`, api_key: PROVIDER_KEY });
      c.models.push({ id: 'test/echo', context_window: 100000, max_output_tokens: 1000 });
      c.offers.push({ listing: 'test/echo@echo', model: 'test/echo', provider: 'echo', upstream_model: 'echo-up', price: { input: 1, output: 2 } });
    },
  });
});
t.teardown(async () => {
  await gw.close();
  await new Promise((resolve) => upstream.close(resolve));
});

/** Any run of 8 characters of the key. */
function leaks(text: string): string | undefined {
  for (let i = 0; i + 8 <= PROVIDER_KEY.length; i++) if (text.includes(PROVIDER_KEY.slice(i, i + 8))) return PROVIDER_KEY.slice(i, i + 8);
  return undefined;
}

for (const mode of ['status401', 'status400', 'masked', 'body200', 'contentType', 'eventBefore', 'eventAfter', 'status500']) {
  for (const stream of [false, true]) {
    t.test(`${mode}${stream ? ', streamed' : ''}: the key reaches no client, history row or log line`, async (t) => {
      logged.length = 0;
      reached = 0;
      for (const route of ['/v1/messages', '/v1/chat/completions']) {
        const res = await fetch(`${gw.url}${route}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'test/echo', max_tokens: 20, stream, messages: [{ role: 'user', content: `mode:${mode}` }] }),
        });
        const text = await res.text();
        // The upstream's 400s are the client's answer; a stream broken after output keeps its 200; the rest fail over to nothing.
        const want = mode === 'status400' || mode === 'masked' ? 400 : mode === 'eventAfter' && stream ? 200 : 503;
        t.equal(res.status, want, `${route}: the echoing upstream's ${mode} answered as such`);
        t.equal(leaks(text), undefined, `${route}: the client's answer`);
        const id = res.headers.get('x-request-id')!;
        await gw.gateway.requestFinished(id);
        await gw.store.flush();
        const row = await gw.store.history.get(id);
        t.ok(row, `${route}: a history row`);
        t.equal(leaks(JSON.stringify(row)), undefined, `${route}: the history row`);
        if (mode === 'body200' && !stream) {
          // A 200 whose body is an error is a failed attempt: no answer, no charge.
          t.equal(res.status, 503, `${route}: no offer served`);
          t.match(row, { costNano: 0, attempts: [{ outcome: 'failed', status: 200 }] }, `${route}: a failed attempt, nothing charged`);
        }
      }
      t.equal(reached, 2, 'both requests reached the echoing upstream');
      t.equal(leaks(logged.join('\n')), undefined, 'the log');
    });
  }
}
