// What a request may cost before it is admitted: the key is checked from the headers before a byte
// of the body is read, and all bodies in flight together stay under server.max_buffered_bytes.
import t from 'tap';
import net from 'node:net';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const BUDGET = 64 * 1024;
let gw: TestGateway;
t.before(async () => {
  gw = await startGateway({
    configure(c) {
      c.server.max_buffered_bytes = BUDGET;
    },
  });
});
t.teardown(() => gw.close());

/** A raw client connection: write pieces, read the answer as it comes. */
class RawClient {
  readonly sock: net.Socket;
  text = '';
  readonly closed: Promise<void>;
  private waiters: Array<() => void> = [];

  constructor(port = Number(new URL(gw.url).port)) {
    this.sock = net.connect(port, '127.0.0.1');
    this.sock.setEncoding('utf8');
    this.sock.on('data', (c: string) => {
      this.text += c;
      for (const w of this.waiters.splice(0)) w();
    });
    this.sock.on('error', () => {});
    this.closed = new Promise((resolve) => this.sock.on('close', () => resolve()));
  }

  write(s: string): void {
    this.sock.write(s);
  }

  /** Resolves once the whole answer (headers and its content-length of body) has arrived. */
  async answer(): Promise<{ status: number; head: string; body: string }> {
    for (;;) {
      const end = this.text.indexOf('\r\n\r\n');
      if (end !== -1) {
        const head = this.text.slice(0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (this.text.length >= end + 4 + length) {
          return { status: Number(head.slice(9, 12)), head, body: this.text.slice(end + 4, end + 4 + length) };
        }
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }
}

const requestHead = (headers: string) => `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n${headers}\r\n`;
const auth = () => `authorization: Bearer ${gw.apiKey}\r\n`;

/** A valid chat body padded with spaces to exactly `size` bytes. */
function paddedBody(size: number): string {
  const body = JSON.stringify({ model: 'test/gpt', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
  return body + ' '.repeat(size - body.length);
}

t.test('no key, a wrong key, a revoked key: 401 from the headers alone, the body never read, the connection closed', async (t) => {
  const { key: revoked, secret: revokedSecret } = await gw.store.keys.create({ accountId: gw.accountId, name: 'to revoke' });
  await gw.store.keys.revoke(revoked.id);
  const cases = {
    'no key': '',
    'an unknown key': `authorization: Bearer sk-service-${'x'.repeat(40)}\r\n`,
    'a revoked key': `x-api-key: ${revokedSecret}\r\n`,
  };
  for (const [name, header] of Object.entries(cases)) {
    const c = new RawClient();
    // Declares 9 MiB and sends none of it: the answer can only come from the headers.
    c.write(requestHead(`${header}content-length: ${9 * 1024 * 1024}\r\n`));
    const a = await c.answer();
    t.equal(a.status, 401, name);
    t.match(a.head, /connection: close/i, `${name}: the connection is closed, its unread body discarded`);
    t.match(JSON.parse(a.body), { error: { type: 'authentication_error' } }, `${name}: in the chat format`);
    await c.closed;
  }
});

t.test('a body read whole: its answer keeps the connection open, and the next request on it is served', async (t) => {
  const c = new RawClient();
  const body = paddedBody(200);
  for (const n of [1, 2]) {
    c.write(requestHead(`${auth()}content-length: ${body.length}\r\n`) + body);
    const a = await c.answer();
    t.equal(a.status, 200, `request ${n} on the connection`);
    t.match(a.head, /connection: keep-alive/i, `request ${n}: the connection stays open`);
    c.text = '';
  }
  c.sock.end();
});

t.test('max_buffered_bytes: past it new requests get 503 with Retry-After; the admitted one is served', async (t) => {
  gw.sim.clear();
  const first = new RawClient();
  const firstBody = paddedBody(BUDGET - 1000);
  first.write(requestHead(`${auth()}content-length: ${firstBody.length}\r\n`) + firstBody.slice(0, 100));

  // Declared length over what is left of the budget.
  const second = new RawClient();
  second.write(requestHead(`${auth()}content-length: 2000\r\n`));
  const refused = await second.answer();
  t.equal(refused.status, 503);
  t.match(refused.head, /retry-after: 1/i);
  t.match(JSON.parse(refused.body), { error: { code: 'server_busy' } });

  // A chunked body that grows past what is left is refused as it grows.
  const chunked = new RawClient();
  const part = 'x'.repeat(1500);
  chunked.write(requestHead(`${auth()}transfer-encoding: chunked\r\n`) + `${part.length.toString(16)}\r\n${part}\r\n`);
  t.equal((await chunked.answer()).status, 503, 'a chunked body over the budget');

  first.write(firstBody.slice(100));
  const served = await first.answer();
  t.equal(served.status, 200, 'the request admitted before the bound was reached is served');
  t.equal(gw.sim.received.length, 1, 'only the admitted request reached the upstream');

  // Its bytes are returned once it ended: the same request fits again.
  const again = new RawClient();
  again.write(requestHead(`${auth()}content-length: ${firstBody.length}\r\n`) + firstBody);
  t.equal((await again.answer()).status, 200, 'the budget is given back when requests end');
});

t.test('two Host headers: 400, closed', async (t) => {
  const c = new RawClient();
  c.write(`GET /v1/models HTTP/1.1\r\nhost: a.example\r\nhost: b.example\r\n${auth()}\r\n`);
  const a = await c.answer();
  t.equal(a.status, 400);
  t.match(JSON.parse(a.body), { error: { code: 'duplicate_host' } });
  await c.closed;
});

t.test('a chunked body (no declared length) is held to the body limit as it comes, and served when within it', async (t) => {
  const small = await startGateway({
    configure(c) {
      c.server.body_limit_bytes = 1024;
    },
  });
  t.teardown(() => small.close());
  const send = (body: string) => {
    const { port } = new URL(small.url);
    const c = new RawClient(Number(port));
    // No declared length to refuse up front: the limit is checked on the bytes as they come.
    c.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nauthorization: Bearer ${small.apiKey}\r\n` +
      `transfer-encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`);
    return c;
  };
  const over = send(paddedBody(1025));
  const refused = await over.answer();
  t.equal(refused.status, 413, 'one byte over the limit');
  t.match(JSON.parse(refused.body), { error: { code: 'request_too_large' } });
  const within = send(paddedBody(1024));
  t.equal((await within.answer()).status, 200, 'at the limit');
  t.equal(small.sim.received.length, 1, 'only the body within the limit reached the upstream');
  t.same(small.sim.received[0].body.messages, [{ role: 'user', content: 'hi' }], 'its body arrived whole');
  within.sock.end();
});
