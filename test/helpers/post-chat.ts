// A chat completion request to a gateway with a Bearer key: status, headers, request id and JSON body.
import http from 'node:http';

export function postChat(url: string, key: string, body: object): Promise<{ status: number; headers: http.IncomingHttpHeaders; requestId: string; json: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, requestId: String(res.headers['x-request-id']), json: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
