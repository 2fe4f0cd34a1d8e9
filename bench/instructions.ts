// Instructions (and simulated cache misses) per request of a whole gateway process, counted by
// valgrind's callgrind: a count, not seconds on a shared 2-core VM, with a breakdown by function
// (C++, builtins, and JIT code named by --perf-basic-prof's map). The count still moves between runs
// of the same code (the event loop's turns batch differently, GC and V8's compiler threads run when
// they run): run each side twice or more. The gateway (or the bare proxy) runs under
// callgrind with counting off; after a warm-up, counting is turned on for exactly `count` requests
// and the totals are read from the dump. Every thread of the process is counted (the SQLite writer,
// V8's GC helpers), the load generator and the simulator are not.
//   npm run build && node dist/bench/instructions.js [base|bare|log-off|metrics|...] [count=2000] [scenario=chat-chat-json] [concurrency=8]
// Variants: comma-separated words; `bare` is the bare proxy, `floor` the floor proxy (floor-proxy.ts:
// the gateway's transport and both bodies parsed, nothing else), the others change the gateway's config:
// `log-off` (no request log), `metrics` (a metrics listener), `billing-off` (the bench's gateway without auth and billing),
// `plugins=auth+schema-check+…` (the gateway with these plugins, in this order: what one plugin costs, against a run without it),
// `postgres` (PostgreSQL mode, one node, on a fresh database at GATEWAY_BENCH_POSTGRES, dropped after).
import http from 'node:http';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keepAliveAgent, type Target } from './load.js';
import { BILLING_OFF_PLUGINS, benchScript, createBenchKey, gatewayConfig, startSimulatorProcess, writeConfig } from './setup.js';
import { requestTarget, scenarios } from './scenarios.js';
import { gatewayBin, type Child } from './procs.js';
import { createBenchDatabase, type BenchDatabase } from './postgres-db.js';
import { compilerInstructions, topFunctions } from './callgrind-functions.js';

const variant = new Set((process.argv[2] ?? 'base').split(','));
const count = Number(process.argv[3] ?? 2000);
const scenario = scenarios.find((s) => s.id === (process.argv[4] ?? 'chat-chat-json'));
const concurrency = Number(process.argv[5] ?? 8);
const warmup = Number(process.env.INSTRUCTIONS_WARMUP ?? 30_000);
// E.g. --perf-basic-prof, so that /tmp/perf-PID.map names the JIT code's addresses in the dump.
// --no-concurrent-recompilation: TurboFan compiles on the main thread, when a function turns hot.
// Valgrind runs one thread at a time, which starved V8's background compiler threads: after 30,000
// requests of warm-up the counted window still ran baseline code (the generic LoadIC builtin
// 27,900 instructions a request on the main thread; 11,700 with the flag) and those threads were
// still compiling in it (the whole process 1.17 to 1.20 million instructions a request; 0.68 to
// 0.69 million with the flag), work that a run outside valgrind has finished after its warm-up.
const nodeFlags = ['--no-concurrent-recompilation', ...(process.env.INSTRUCTIONS_NODE_FLAGS ?? '').split(' ').filter(Boolean)];
// INSTRUCTIONS_TOP=N: the main thread's N costliest functions too, JIT code named (--perf-basic-prof).
const top = Number(process.env.INSTRUCTIONS_TOP ?? 0);
if (top > 0 && !nodeFlags.includes('--perf-basic-prof')) nodeFlags.push('--perf-basic-prof');
if (!scenario) throw new Error(`no scenario ${process.argv[4]}`);

const dir = mkdtempSync(join(tmpdir(), 'gateway-bench-instructions-'));
let sim: Child | undefined;
let proc: ReturnType<typeof spawn> | undefined;
let database: BenchDatabase | undefined;
try {
  sim = await startSimulatorProcess();
  let args: string[];
  let key = 'none';
  if (variant.has('bare') || variant.has('floor')) {
    args = [benchScript(variant.has('bare') ? 'bare-proxy.js' : 'floor-proxy.js'), sim.url];
  } else {
    let storage: string | { postgres: string } = join(dir, 'gw.db');
    if (variant.has('postgres')) {
      const db = await createBenchDatabase();
      if (typeof db === 'string') throw new Error(db);
      database = db;
      storage = { postgres: db.url };
    }
    const plugins = [...variant].find((v) => v.startsWith('plugins='))?.slice('plugins='.length).split('+');
    const cfg = gatewayConfig(sim.url, storage, plugins ?? (variant.has('billing-off') ? BILLING_OFF_PLUGINS : undefined));
    if (variant.has('log-off')) cfg.log = { requests: false };
    if (variant.has('metrics')) cfg.metrics = { host: '127.0.0.1', port: 0 };
    const file = writeConfig(dir, 'gw', cfg);
    key = await createBenchKey(file);
    args = [gatewayBin, 'serve', '--config', file];
  }
  proc = spawn('valgrind', ['--tool=callgrind', '--instr-atstart=no', '--cache-sim=yes', '--separate-threads=yes', `--callgrind-out-file=${dir}/cg.%p`, process.execPath, ...nodeFlags, ...args], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }); // cwd: V8's logs (with --perf-basic-prof) go with the dump
  const url = await readyUrl(proc);
  const target = requestTarget(scenario, Number(new URL(url).port), key);
  const agent = keepAliveAgent(concurrency);
  await send(target, agent, warmup, concurrency); // warm-up: JIT tiers, pools, caches
  callgrind('-i', 'on');
  await send(target, agent, count, concurrency);
  callgrind('-d');
  callgrind('-i', 'off');
  agent.destroy();
  const totals = readTotals(dir);
  const per = (totals: Map<string, number>, event: string) => ((totals.get(event) ?? 0) / count).toFixed(0).padStart(9);
  process.stdout.write(`${[...variant].join(',')}, ${scenario.id}, ${count} requests at ${concurrency} in flight, per request:\n`);
  process.stdout.write(`  event  process  main thread\n`);
  for (const event of totals.all.keys()) process.stdout.write(`  ${event.padEnd(5)} ${per(totals.all, event)} ${per(totals.main, event)}\n`);
  // V8 compiling in the window: part of Ir above, and what moves it most between runs (compilerInstructions).
  const compiling = new Map(totals.files.map((f) => [f, compilerInstructions(f)]));
  const compilingMain = compiling.get(totals.mainFile) ?? 0;
  const compilingAll = [...compiling.values()].reduce((a, b) => a + b, 0);
  const perCount = (n: number) => (n / count).toFixed(0).padStart(9);
  process.stdout.write(`  of Ir, V8 compiling    ${perCount(compilingAll)} ${perCount(compilingMain)}\n`);
  process.stdout.write(`  Ir without compiling   ${perCount(totals.all.get('Ir')! - compilingAll)} ${perCount(totals.main.get('Ir')! - compilingMain)}\n`);
  if (top > 0) {
    process.stdout.write(`main thread, self instructions per request, top ${top}:\n`);
    const map = `/tmp/perf-${proc.pid}.map`;
    for (const f of topFunctions(totals.mainFile, existsSync(map) ? map : undefined, count, top)) {
      process.stdout.write(`  ${f.perRequest.toFixed(0).padStart(8)}  ${f.name}\n`);
    }
  }
} finally {
  proc?.kill('SIGKILL');
  await sim?.stop();
  await database?.drop();
  // INSTRUCTIONS_KEEP=1 keeps the dump for callgrind_annotate.
  if (process.env.INSTRUCTIONS_KEEP) process.stdout.write(`dump kept in ${dir}\n`);
  else {
    rmSync(dir, { recursive: true, force: true });
    if (top > 0 && proc?.pid) rmSync(`/tmp/perf-${proc.pid}.map`, { force: true });
  }
}

function callgrind(...args: string[]): void {
  execFileSync('callgrind_control', [...args, String(proc!.pid)], { stdio: 'ignore' });
}

/**
 * The event names and sums of the dump: the process's, and the main thread's (thread 1, the event
 * loop). With --separate-threads each thread has a file of its own (cg.PID.DUMP-THREAD).
 */
function readTotals(dir: string): { all: Map<string, number>; main: Map<string, number>; mainFile: string; files: string[] } {
  const all = new Map<string, number>();
  let main = new Map<string, number>();
  let mainFile = '';
  const files = readdirSync(dir).filter((f) => /^cg\.\d+\.\d+-\d+$/.test(f)).map((f) => join(dir, f));
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const events = /^events: (.*)$/m.exec(text)![1].split(' ');
    const sums = /^summary: (.*)$/m.exec(text)![1].split(' ').map(Number);
    const totals = new Map(events.map((e, i) => [e, sums[i] ?? 0]));
    for (const [e, v] of totals) all.set(e, (all.get(e) ?? 0) + v);
    if (file.endsWith('-01')) {
      main = totals;
      mainFile = file;
    }
  }
  return { all, main, mainFile, files };
}

/** Resolves with the URL the child announces (the gateway's JSON line, the bare proxy's first line). */
function readyUrl(p: ReturnType<typeof spawn>): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no URL within 180 s:\n${out.slice(-2000)}`)), 180_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = /"url":"(http:[^"]+)"/.exec(out) ?? /^(http:\/\/\S+)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        // Stop collecting: the request lines that follow would grow `out` and the search over it.
        p.stdout!.off('data', onData);
        p.stderr!.off('data', onData);
        p.stdout!.resume();
        p.stderr!.resume();
        resolve(m[1]);
      }
    };
    p.stdout!.on('data', onData);
    p.stderr!.on('data', onData);
    p.once('exit', (code) => reject(new Error(`exited ${code}:\n${out.slice(-2000)}`)));
  });
}

/** Exactly `total` requests, `concurrency` in flight; any non-2xx answer fails the run. */
function send(target: Target, agent: http.Agent, total: number, concurrency: number): Promise<void> {
  let sent = 0;
  let done = 0;
  return new Promise((resolve, reject) => {
    const one = () => {
      sent++;
      const req = http.request({ port: target.port, host: '127.0.0.1', method: 'POST', path: target.path, headers: target.headers, agent }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode! >= 300) return reject(new Error(`status ${res.statusCode}`));
          if (++done === total) resolve();
          else if (sent < total) one();
        });
      });
      req.on('error', reject);
      req.end(target.body);
    };
    for (let i = 0; i < Math.min(concurrency, total); i++) one();
  });
}
