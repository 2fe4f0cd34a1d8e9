// A streamed chat completion under load, as a load test counts it: never rejects, so a connection
// cut (a node killed, say) is an outcome like any other.
import http from 'node:http';

export interface StreamOutcome {
  /** 'ok' (200 and the whole stream), a refusal's status and error code ('503 store_unavailable'), or 'failed': no answer, or the stream cut. */
  result: string;
  retryAfter?: string;
  requestId?: string;
  /** Date.now() when it was sent. */
  startedAt: number;
}

export function streamChat(url: string, key: string, body: object): Promise<StreamOutcome> {
  const startedAt = Date.now();
  return new Promise((resolve) => {
    const req = http.request(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        const answer = { retryAfter: res.headers['retry-after'], requestId: res.headers['x-request-id'] as string | undefined, startedAt };
        if (res.statusCode === 200) return resolve({ ...answer, result: text.includes('data: [DONE]') ? 'ok' : 'failed' });
        let code = '';
        try {
          code = ` ${JSON.parse(text).error.code}`;
        } catch {}
        resolve({ ...answer, result: `${res.statusCode}${code}` });
      });
      res.on('error', () => resolve({ result: 'failed', startedAt }));
    });
    req.on('error', () => resolve({ result: 'failed', startedAt }));
    req.end(JSON.stringify(body));
  });
}
