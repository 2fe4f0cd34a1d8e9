// A 60 MB stream passes through the gateway with its memory flat: nothing buffers the whole stream
// (that would add at least the stream's size). Garbage not yet collected adds 14 to 19 MB on a quiet
// machine, whatever the stream's length, and went to 27 MB in a loaded CI run: the stream is long
// enough for the bound to sit well above that and well below the stream. The
// simulator runs in its own process, so the gateway's memory is the gateway's alone.
// The young generation is held at 16 MB semi-spaces, what V8 gives Node 20: Node 24's V8 lets them
// grow larger, and its uncollected garbage alone then went past the bound (34 to 117 MB growth).
import t, { type Test } from 'tap';
import http from 'node:http';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testConfigObject } from '../helpers/gateway.js';
import { childEnv, gatewayBin, serveProcess } from '../helpers/process.js';

/** `gateway simulate` in a child process; resolves with its URL (the first line it prints). */
async function simulatorProcess(t: Test): Promise<string> {
  const child = spawn(process.execPath, [gatewayBin, 'simulate', '--port', '0', '--host', '127.0.0.1'], { stdio: ['ignore', 'pipe', 'inherit'], env: childEnv() });
  t.teardown(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout!.setEncoding('utf8');
  while (!out.includes('\n')) out += (await once(child.stdout!, 'data'))[0];
  return out.trim().split('\n')[0];
}

const dir = mkdtempSync(join(tmpdir(), 'gw-mem-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** Stream a request, discarding the body; returns the bytes received. */
function drain(url: string, key: string, body: object, onChunk: () => void): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' } }, (res) => {
      let n = 0;
      res.on('data', (c: Buffer) => {
        n += c.length;
        onChunk();
      });
      res.on("end", () => (res.statusCode === 200 ? resolve(n) : reject(new Error(`status ${res.statusCode}`))));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

t.test('60 MB stream, messages client to messages upstream', async (t) => {
  const simUrl = await simulatorProcess(t);
  const cfg = testConfigObject(join(dir, 'gw.db'));
  cfg.providers = [
    { id: 'sim-messages', format: 'messages', base_url: simUrl, api_key: 'sk-sim' },
    { id: 'sim-chat', format: 'chat', base_url: `${simUrl}/v1`, api_key: 'sk-sim' },
  ];
  cfg.demo = { enabled: true, email: 'mem@example.com', credit_usd: 1000 };
  cfg.upstream.idle_timeout_ms = 10000;
  // ~10 million one-token words make 60 MB: allow that much output.
  Object.assign(cfg.models[0], { context_window: 18_000_000, max_output_tokens: 15_000_000 });
  const file = join(dir, 'gw.json');
  writeFileSync(file, JSON.stringify(cfg));
  const gw = await serveProcess(file, { expectDemoKey: true, nodeArgs: ['--max-semi-space-size=16'] });
  t.teardown(() => gw.child.kill('SIGKILL'));

  const body = (model: string) => ({ model, max_tokens: 15_000_000, stream: true, messages: [{ role: 'user', content: 'big <<sim bytes=60000000>>' }] });
  // Warm up (JIT, pools, SQLite pages), then measure the peak over a 60 MB stream.
  await drain(`${gw.url}/v1/messages`, gw.key!, { ...body('test/claude'), messages: [{ role: 'user', content: 'warm <<sim bytes=1000000>>' }] }, () => {});
  const base = gw.memory().rss;
  let peak = 0;
  let chunks = 0;
  const n = await drain(`${gw.url}/v1/messages`, gw.key!, body('test/claude'), () => {
    if (++chunks % 200 === 0) peak = Math.max(peak, gw.memory().rss);
  });
  t.ok(n > 60_000_000, `received ${n} bytes`);
  const growth = (peak - base) / 1e6;
  t.ok(growth < 40, `RSS grew by ${growth.toFixed(1)} MB over a 60 MB stream (base ${(base / 1e6).toFixed(1)} MB)`);
});
