// The same simulator over cleartext HTTP/2 (prior knowledge), as the gateway's HTTP/2 transport reaches it.
import t from 'tap';
import http2 from 'node:http2';
import http2wrapper from 'http2-wrapper';
import { SseParser } from '../../../lib/sse.js';
import { startSimulator } from '../../../lib/simulator/index.js';

const KEY = 'sk-h2';
const sim = await startSimulator({ http2: true, apiKey: KEY });
const session = http2.connect(sim.url);
t.teardown(async () => {
  session.close();
  await sim.close();
});

interface H2Result {
  status?: number;
  headers?: http2.IncomingHttpHeaders;
  text: string;
  error?: Error;
}

function post(path: string, body: object, headers: Record<string, string> = {}): Promise<H2Result> {
  return new Promise((resolve) => {
    const out: H2Result = { text: '' };
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/json', ...headers });
    req.setEncoding('utf8');
    req.on('response', (h) => {
      out.status = Number(h[':status']);
      out.headers = h;
    });
    req.on('data', (chunk: string) => (out.text += chunk));
    req.on('end', () => resolve(out));
    req.on('error', (error) => resolve({ ...out, error }));
    req.end(JSON.stringify(body));
  });
}

const chat = (content: string, extra: object = {}) => ({ model: 'm', messages: [{ role: 'user', content }], ...extra });

t.test('chat and messages answers over h2c', async (t) => {
  sim.clear();
  const res = await post('/v1/chat/completions', chat('hello <<sim words=3>>'), { authorization: `Bearer ${KEY}` });
  t.equal(res.status, 200);
  t.equal(JSON.parse(res.text).choices[0].message.content.split(' ').length, 3);
  t.equal(sim.received[0].headers[':method'], 'POST', 'HTTP/2 pseudo-headers are recorded as received');
  t.same(sim.received[0].body, chat('hello <<sim words=3>>'));

  const stream = await post('/v1/messages', { ...chat('hi <<sim words=2>>'), max_tokens: 10, stream: true }, { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' });
  const events = new SseParser().push(stream.text).map((e) => e.event);
  t.equal(events[0], 'message_start');
  t.equal(events.at(-1), 'message_stop');

  t.equal((await post('/v1/chat/completions', chat('x'), { authorization: 'Bearer wrong' })).status, 401);
});

t.test('reset_mid_stream resets only that HTTP/2 stream', async (t) => {
  const broken = await post('/v1/chat/completions', chat('<<sim fault=reset_mid_stream after=1>>', { stream: true }), { authorization: `Bearer ${KEY}` });
  t.equal(broken.status, 200);
  t.match(broken.error, { code: 'ERR_HTTP2_STREAM_ERROR' });
  t.equal(new SseParser().push(broken.text).length, 1, 'one event before the reset');
  t.notOk(session.destroyed, 'the session survives');
  const after = await post('/v1/chat/completions', chat('again'), { authorization: `Bearer ${KEY}` });
  t.equal(after.status, 200, 'and serves the next request');
});

t.test('http2-wrapper reaches it through an h2c session', async (t) => {
  const body = await new Promise<string>((resolve, reject) => {
    const req = http2wrapper.request(
      sim.url + '/v1/chat/completions',
      { method: 'POST', h2session: session, headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve(text));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(chat('via wrapper <<sim words=4>>')));
  });
  t.equal(JSON.parse(body).choices[0].message.content.split(' ').length, 4);
});
