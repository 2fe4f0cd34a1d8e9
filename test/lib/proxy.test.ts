// The HTTP/1.1 transport (lib/proxy.ts) against real servers on 127.0.0.1.
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpProxyTransport, headerOf } from '../../lib/proxy.js';
import type { Provider } from '../../lib/context.js';

const listen = (server: http.Server) =>
  new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));

t.test("the upstream agent is handed only the request options that are set (http-proxy-3's undefined TLS fields cost a slow copy each)", async (t) => {
  const seen: { path?: string; auth?: string; body: string }[] = [];
  const upstream = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (c) => (body += c)).on('end', () => {
      seen.push({ path: req.url, auth: req.headers.authorization, body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  const upstreamUrl = await listen(upstream);
  const transport = new HttpProxyTransport(4);
  const provider = { id: 'p', url: new URL(`${upstreamUrl}/v1`) } as Provider;

  // What Node's own addRequest is handed (patched before the transport makes its agent, on the first send).
  const agentOptions: Record<string, unknown>[] = [];
  const original = http.Agent.prototype as unknown as { addRequest: (req: unknown, options: Record<string, unknown>) => void };
  const addRequest = original.addRequest;
  original.addRequest = function (this: http.Agent, req, options) {
    agentOptions.push({ ...options });
    return addRequest.call(this, req, options);
  };
  t.teardown(() => void (original.addRequest = addRequest));

  const front = http.createServer(async (_req, res) => {
    const call = transport.send({ provider, path: '/chat/completions', headers: { authorization: 'Bearer up', 'content-type': 'application/json' }, body: '{"n":1}' }, res);
    const answer = await call.response;
    let text = '';
    answer.body.setEncoding('utf8').on('data', (c) => (text += c)).on('end', () => res.writeHead(answer.status).end(text));
  });
  const frontUrl = await listen(front);
  t.teardown(() => {
    transport.close();
    front.close();
    upstream.close();
  });

  for (let i = 0; i < 2; i++) {
    const res = await fetch(`${frontUrl}/`, { method: 'POST' });
    t.equal(await res.text(), '{"ok":true}', `answer ${i + 1} relayed`);
  }
  t.same(seen, [1, 2].map(() => ({ path: '/v1/chat/completions', auth: 'Bearer up', body: '{"n":1}' })), 'the upstream got the path, headers and body (the second on the kept-alive socket)');
  t.equal(agentOptions.length, 2);
  for (const options of agentOptions) {
    t.match(options, { host: '127.0.0.1', method: 'POST', path: '/v1/chat/completions' });
    t.same(Object.keys(options).filter((k) => options[k] === undefined), [], 'no undefined option');
  }
});

t.test("an upstream answer's header object is never built unless read (by us or by Node's agent), and the Keep-Alive hint still counts", async (t) => {
  let hint = 'timeout=5';
  const sockets = new Set<unknown>();
  const upstream = http.createServer((req, res) => {
    sockets.add(req.socket);
    res.writeHead(200, [['Content-Type', 'text/event-stream'], ['X-Vendor', 'a'], ['x-vendor', 'b'], ['Keep-Alive', hint]]).end('data: [DONE]\n\n');
  });
  upstream.keepAliveTimeout = 60_000;
  const upstreamUrl = await listen(upstream);
  const transport = new HttpProxyTransport(2);
  const provider = { id: 'p', url: new URL(upstreamUrl) } as Provider;
  const seen: { type?: string; missing?: string; builtAtRead: boolean; builtAfterEnd?: boolean; vendor?: unknown }[] = [];
  const front = http.createServer(async (_req, res) => {
    const answer = await transport.send({ provider, path: '/x', headers: {}, body: '{}' }, res).response;
    // Node's IncomingMessage keeps the header object it builds on first access under this symbol.
    const kHeaders = Object.getOwnPropertySymbols(answer.body).find((s) => s.description === 'kHeaders');
    if (!kHeaders) throw new Error("this Node keeps no kHeaders: the test cannot tell whether the header object was built");
    const built = () => (answer.body as unknown as Record<symbol, unknown>)[kHeaders] != null;
    const s: (typeof seen)[number] = { type: headerOf(answer, 'content-type'), missing: headerOf(answer, 'retry-after'), builtAtRead: built() };
    seen.push(s);
    answer.body.resume().on('end', () =>
      // After the socket went back to the agent (keepSocketAlive, on the next tick after 'end').
      setImmediate(() => {
        s.builtAfterEnd = built();
        s.vendor = answer.headers['x-vendor'];
        res.end();
      }),
    );
  });
  const frontUrl = await listen(front);
  t.teardown(() => {
    transport.close();
    front.close();
    upstream.close();
  });
  for (const h of ['timeout=5', 'timeout=5', 'timeout=1', 'timeout=5']) {
    hint = h;
    await (await fetch(`${frontUrl}/`, { method: 'POST' })).text();
  }
  const first = { type: 'text/event-stream', missing: undefined, builtAtRead: false, builtAfterEnd: false, vendor: 'a, b' };
  t.same(seen, [first, first, first, first], 'found whatever its case; the whole object is there when asked for, and not built before');
  // timeout=1 leaves no time to reuse the socket (Node's agent keeps a second's margin): the next request opens another.
  t.equal(sockets.size, 2, 'the hint is read: sockets kept alive at timeout=5, not after timeout=1');
  t.equal(headerOf({ status: 200, headers: { 'retry-after': '3' }, body: null as never }, 'retry-after'), '3', 'a response without a raw head: from its headers');
});
