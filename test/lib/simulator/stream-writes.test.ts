// How a plain stream (no fault, no delay) leaves the simulator over HTTP/1.1: each event in a socket
// write of its own (the benchmark's gateway is to read a 20-chunk stream as a real upstream sends it).
import t from 'tap';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createHandler } from '../../../lib/simulator/handler.js';

const server = http.createServer(createHandler({}));
/** Socket writes (system calls) of the server's side, all connections. */
let socketWrites = 0;
server.on('connection', (socket: Socket) => {
  const s = socket as Socket & { _write: Function; _writev: Function };
  const [write, writev] = [s._write, s._writev];
  s._write = function (...args: unknown[]) {
    socketWrites++;
    return write.apply(this, args);
  };
  s._writev = function (...args: unknown[]) {
    socketWrites++;
    return writev.apply(this, args);
  };
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
const port = (server.address() as AddressInfo).port;

function post(content: string, onResponse: (res: http.IncomingMessage) => void): void {
  const body = JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content }] });
  const req = http.request({ port, method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json' }, agent: false }, onResponse);
  req.end(body);
}

t.test('each event of a plain stream leaves in its own socket write, as a real upstream sends them', async (t) => {
  socketWrites = 0;
  const text = await new Promise<string>((resolve) =>
    post('hi <<sim words=20 chunks=20>>', (res) => {
      let out = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (out += chunk));
      res.on('end', () => resolve(out));
    }),
  );
  const events = text.split('\n\n').filter(Boolean).length;
  t.equal(events, 23, 'role, 20 content chunks, finish, [DONE]');
  // Headers and the final empty chunk take a write each too; coalesced events would take far fewer.
  t.ok(socketWrites >= events, `${socketWrites} socket writes for ${events} events`);
});

