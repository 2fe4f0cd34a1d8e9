// A pass-through HTTP proxy in front of the gateway that records what a client sends (its model ids,
// output budgets, prompt sizes) and the status it got: for clients we cannot instrument, such as the
// Claude Code binary.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ClientRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The parsed JSON body (undefined when empty or not JSON). */
  body: any;
  bytes: number;
  /** The gateway's answer status. */
  status?: number;
}

export interface RecordingProxy {
  url: string;
  requests: ClientRequest[];
  close(): Promise<void>;
}

export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const requests: ClientRequest[] = [];
  const to = new URL(target);
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    let body: any;
    try {
      body = raw.length > 0 ? JSON.parse(raw.toString('utf8')) : undefined;
    } catch {
      body = undefined;
    }
    const record: ClientRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, bytes: raw.length };
    requests.push(record);
    const upstream = http.request(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: { ...req.headers, host: to.host } },
      (answer) => {
        record.status = answer.statusCode;
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    upstream.end(raw);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
