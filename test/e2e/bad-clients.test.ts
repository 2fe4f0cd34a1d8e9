// Hostile or broken clients at the socket level: trickled headers, huge headers, conflicting
// framing, a body that never ends. Each gets a clear 4xx or a closed connection; the gateway keeps
// serving and forwards nothing twice.
import t from 'tap';
import net from 'node:net';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
t.before(async () => {
  gw = await startGateway({
    configure(c) {
      c.server.headers_timeout_ms = 300;
      c.server.request_timeout_ms = 600;
    },
  });
});
t.teardown(() => gw.close());

/** Write raw bytes (optionally in timed pieces) and collect what the gateway answers until it closes. */
function rawExchange(pieces: string[], gapMs = 0): Promise<string> {
  const { port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(port), '127.0.0.1');
    let out = '';
    sock.setEncoding('utf8');
    sock.on('data', (c) => (out += c));
    sock.on('close', () => resolve(out));
    sock.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' || e.code === 'EPIPE' ? resolve(out) : reject(e)));
    let i = 0;
    const next = () => {
      if (i >= pieces.length || sock.destroyed) return;
      sock.write(pieces[i++]);
      if (gapMs > 0) setTimeout(next, gapMs);
      else next();
    };
    next();
  });
}

const body = JSON.stringify({ model: 'test/gpt', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
const head = (extra: string) =>
  `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${gw.apiKey}\r\ncontent-type: application/json\r\n${extra}`;

t.test('headers trickled slower than headers_timeout_ms: 408 and closed', async (t) => {
  const pieces = 'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-slow: 1'.split('');
  const out = await rawExchange(pieces, 50);
  t.match(out, /^HTTP\/1\.1 408/);
});

t.test('a body that never completes: cut off by request_timeout_ms', async (t) => {
  gw.sim.clear();
  const out = await rawExchange([head(`content-length: ${body.length}\r\n\r\n`), body.slice(0, 10)]);
  t.match(out, /^HTTP\/1\.1 408|^$/, 'a 408 or a closed connection');
  t.equal(gw.sim.received.length, 0, 'nothing was forwarded');
});

t.test('huge headers: 431', async (t) => {
  const out = await rawExchange([head(`x-big: ${'a'.repeat(64 * 1024)}\r\ncontent-length: 0\r\n\r\n`)]);
  t.match(out, /^HTTP\/1\.1 431/);
});

t.test('Content-Length together with Transfer-Encoding: 400, forwarded never', async (t) => {
  gw.sim.clear();
  const chunked = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
  const out = await rawExchange([head(`content-length: 5\r\ntransfer-encoding: chunked\r\n\r\n${chunked}`)]);
  t.match(out, /^HTTP\/1\.1 400/);
  t.equal(gw.sim.received.length, 0);
});

t.test('a pipelined second request after a refused oversized body is not parsed from its bytes', async (t) => {
  gw.sim.clear();
  const limit = gw.config.server.body_limit_bytes;
  const out = await rawExchange([head(`content-length: ${limit + 1}\r\n\r\n`) + 'x'.repeat(1000)]);
  t.match(out, /^HTTP\/1\.1 413/);
  t.match(out, /connection: close/i);
  t.equal(gw.sim.received.length, 0);
});

t.test('the gateway still serves normal clients afterwards', async (t) => {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
    body,
  });
  t.equal(res.status, 200);
  t.equal(gw.sim.received.length, 1, 'forwarded exactly once');
});
