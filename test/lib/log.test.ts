// Log output: levels, json and pretty formats (pretty by default on a terminal), reconfiguration;
// and FailureRun, which logs the first failure of a run and counts the rest.
import t from 'tap';
import { createLogger, LogSink, type Logger, type LogLevel } from '../../lib/log.js';
import { FailureRun } from '../../lib/log-run.js';
import { until } from '../helpers/until.js';

function capture(isTTY?: boolean) {
  const lines: string[] = [];
  return { lines, stream: { isTTY, write: (text: string) => lines.push(text) } };
}

t.test('levels: lines below the configured level are left out', async (t) => {
  const out = capture();
  const sink = new LogSink(out.stream, { level: 'warn', format: 'json' });
  const log = createLogger(sink);
  for (const level of ['debug', 'info', 'warn', 'error'] as LogLevel[]) log(level, `a ${level} line`);
  t.same(out.lines.map((l) => JSON.parse(l).level), ['warn', 'error']);
  sink.configure({ level: 'debug', format: 'json' });
  log('debug', 'now shown');
  t.equal(JSON.parse(out.lines.at(-1)!).msg, 'now shown', 'a reload lowers the level');
});

t.test('json: one object a line, time level msg first, errors as their stack', async (t) => {
  const out = capture();
  const log = createLogger(new LogSink(out.stream, { level: 'info', format: 'json' }));
  log('error', 'it broke', { request_id: 'req_1', err: new Error('boom') });
  t.equal(out.lines.length, 1);
  t.ok(out.lines[0].endsWith('\n'));
  const line = JSON.parse(out.lines[0]);
  t.same(Object.keys(line).slice(0, 3), ['time', 'level', 'msg']);
  t.match(line, { level: 'error', msg: 'it broke', request_id: 'req_1', err: /Error: boom\n\s+at / });
  t.ok(!Number.isNaN(Date.parse(line.time)));
});

t.test('pretty: by default on a terminal, json otherwise; an explicit format wins', async (t) => {
  const tty = capture(true);
  createLogger(new LogSink(tty.stream, { level: 'info' }))('info', 'gateway listening', { url: 'http://127.0.0.1:1', note: 'two words' });
  t.match(tty.lines[0], /^\d\d:\d\d:\d\d\.\d{3} INFO  gateway listening url=http:\/\/127\.0\.0\.1:1 note="two words"\n$/);
  const pipe = capture(false);
  createLogger(new LogSink(pipe.stream, { level: 'info' }))('info', 'x');
  t.equal(JSON.parse(pipe.lines[0]).msg, 'x');
  const forced = capture(true);
  createLogger(new LogSink(forced.stream, { level: 'info', format: 'json' }))('info', 'y');
  t.equal(JSON.parse(forced.lines[0]).msg, 'y');
});

t.test('FailureRun: the first failure of a run in full, the others as a count per interval', async (t) => {
  const logged: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
  const log: Logger = (level, msg, fields) => void logged.push({ level, msg, fields });
  const run = new FailureRun(log, { first: 'request failed', again: 'more requests failed', intervalMs: 20 });
  t.teardown(() => run.close());
  for (let i = 0; i < 1000; i++) run.failed(new Error(`database away ${i}`), { request_id: `req_${i}` });
  t.equal(logged.length, 1, 'one line for a thousand failures');
  t.match(logged[0], { level: 'error', msg: 'request failed', fields: { request_id: 'req_0', err: { message: 'database away 0' } } });
  await until('the summary is logged', () => logged.length === 2, 2000);
  t.match(logged[1], { level: 'error', msg: /^more requests failed: 999 more times in \d+ s$/, fields: { count: 999 } });
  // An interval without failures ends the run: the next failure is logged in full again.
  await until('the run ends', () => (run as unknown as { since?: number }).since === undefined, 2000);
  run.failed(new Error('again'), { request_id: 'req_x' });
  t.match(logged.at(-1), { msg: 'request failed', fields: { request_id: 'req_x' } });
  t.equal(logged.length, 3);
});

t.test('FailureRun with a recovery line: the count so far, then the recovery', async (t) => {
  const logged: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
  const log: Logger = (level, msg, fields) => void logged.push({ level, msg, fields });
  const run = new FailureRun(log, { first: 'database away', again: 'reserves refused', recovered: 'database back' });
  run.failed('ECONNREFUSED');
  run.failed('ECONNREFUSED');
  run.failed('ECONNREFUSED');
  run.ok();
  run.ok();
  t.same(logged.map((l) => [l.level, l.msg]), [
    ['error', 'database away'],
    ['error', 'reserves refused: 2 more times in 0 s'],
    ['info', 'database back'],
  ]);
});

t.test('batched: lines wait across event-loop turns, then leave in one write of the stream', async (t) => {
  const { Writable } = await import('node:stream');
  const writes: string[] = [];
  let wrote: () => void = () => {};
  const stream = new Writable({
    writev(chunks, cb) {
      writes.push(chunks.map((c) => String(c.chunk)).join(''));
      cb();
    },
    write(chunk, _enc, cb) {
      writes.push(String(chunk));
      wrote();
      cb();
    },
  });
  const sink = new LogSink(stream, { level: 'info', format: 'json' }, true);
  const written = new Promise<void>((resolve) => (wrote = resolve));
  const exitListeners = process.listenerCount('exit');
  sink.write({ time: 't', level: 'info', msg: 'line 0' });
  t.equal(process.listenerCount('exit'), exitListeners + 1, 'an exit hook while lines wait');
  for (let i = 1; i < 3; i++) {
    await new Promise((r) => setImmediate(r));
    sink.write({ time: 't', level: 'info', msg: `line ${i}` });
  }
  t.same(writes, [], 'held across turns');
  const alive = setInterval(() => {}, 1000); // the sink's timer is unref'd: it keeps no process up
  await written;
  clearInterval(alive);
  t.equal(writes.length, 1, 'one write');
  t.same(writes[0].split('\n').filter(Boolean).map((l) => JSON.parse(l).msg), ['line 0', 'line 1', 'line 2']);
  sink.write({ time: 't', level: 'info', msg: 'at close' });
  sink.flush();
  t.equal(writes.length, 2, 'flush writes what is held at once (closing)');
  sink.write({ time: 't', level: 'info', msg: 'x'.repeat(40_000) });
  t.equal(writes.length, 3, 'a full batch leaves at once');
  t.equal(process.listenerCount('exit'), exitListeners, 'no exit hook left behind once written');
});

t.test('batched: what waits is written when the process exits, after a crash too', async (t) => {
  const { execFile } = await import('node:child_process');
  const script = `
    const { LogSink } = await import(${JSON.stringify(new URL('../../dist/lib/log.js', import.meta.url).href)});
    const sink = new LogSink(process.stdout, { level: 'info', format: 'json' }, true);
    sink.writeText('{"msg":"before the crash"}\\n');
    setImmediate(() => { throw new Error('boom'); });`;
  const { code, stdout } = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
    execFile(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }, (err, stdout) =>
      resolve({ code: err ? (err as { code?: number }).code ?? null : 0, stdout }));
  });
  t.equal(code, 1, 'the process crashed');
  t.equal(stdout, '{"msg":"before the crash"}\n');
});
