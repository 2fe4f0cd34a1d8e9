// The bench's child processes (simulator, gateways: `node bin/gateway …`) and what /proc tells about them.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../lib/package-root.js';

export const gatewayBin = join(packageRoot(), 'bin', 'gateway');

export interface Child {
  name: string;
  pid: number;
  /** What the ready line announced (the listening URL). */
  url: string;
  /** The last lines it printed, for error messages. */
  tail(): string;
  stop(): Promise<void>;
}

/**
 * Starts `node SCRIPT ARGS` (bin/gateway unless told) and resolves once a line of its output gives
 * `readyUrl` a URL. Its output is read to the end (a full pipe would stall it), keeping only the last lines.
 */
export function startChild(
  name: string,
  args: string[],
  readyUrl: (line: string) => string | undefined,
  {
    script = gatewayBin,
    timeoutMs = 20_000,
    nodeFlags = [],
    onStdout,
  }: {
    script?: string;
    timeoutMs?: number;
    /** Node flags of this child's own (e.g. --trace-gc-nvp). */
    nodeFlags?: string[];
    /** Every chunk of its stdout, from the start. */
    onStdout?: (chunk: string) => void;
  } = {},
): Promise<Child> {
  // GATEWAY_BENCH_NODE_FLAGS (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) go to the gateway
  // processes only: Node refuses profiling flags in NODE_OPTIONS, which would reach every process.
  const flags = script === gatewayBin ? (process.env.GATEWAY_BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean) : [];
  const proc = spawn(process.execPath, [...flags, ...nodeFlags, script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const output = new Output();
  if (onStdout) proc.stdout!.setEncoding('utf8').on('data', onStdout); // text, as Output reads it
  let exited = false;
  // 'close', not 'exit': the output is read to its end first (for the tail in error messages).
  const exit = new Promise<void>((resolve) => proc.once('close', () => resolve(void (exited = true))));
  const tail = () => output.tail();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(`${name} did not announce its URL within ${timeoutMs} ms`), timeoutMs);
    const fail = (why: string) => {
      clearTimeout(timer);
      if (!exited) proc.kill('SIGKILL');
      reject(new Error(`${why}\n${tail()}`));
    };
    output.read(proc, (line) => {
      const url = readyUrl(line);
      if (url === undefined) return false;
      clearTimeout(timer);
      resolve({ name, pid: proc.pid!, url, tail, stop: () => stopChild(proc, exit, () => exited) });
      return true;
    });
    proc.once('error', (err) => fail(`${name} could not start: ${err.message}`));
    void exit.then(() => {
      if (output.reading) fail(`${name} exited (code ${proc.exitCode}, signal ${proc.signalCode}) before it was ready`);
    });
  });
}

/** Output kept for error messages: the last TAIL_CHARS of stdout and stderr as they arrived. */
const TAIL_CHARS = 8192;

/**
 * A child's stdout and stderr, read to the end (a full pipe would stall it). Split into lines only
 * until the ready line: after it, a gateway writes a line per request, and splitting them here
 * would spend this process's CPU, which the load generator needs, on the cores the gateway shares.
 */
class Output {
  /** Lines are still read for the ready line. */
  reading = true;
  private recent: string[] = [];
  private recentChars = 0;

  read(proc: ChildProcess, isReady: (line: string) => boolean): void {
    for (const stream of [proc.stdout!, proc.stderr!]) {
      let rest = '';
      // Text, not the Buffers: a pipe's read buffers are not the reader's to keep.
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        this.keep(chunk);
        if (!this.reading) return;
        const parts = (rest + chunk).split('\n');
        rest = parts.pop()!;
        for (const line of parts) if (this.reading && isReady(line)) this.reading = false;
      });
    }
  }

  private keep(chunk: string): void {
    this.recent.push(chunk);
    this.recentChars += chunk.length;
    while (this.recentChars - this.recent[0].length >= TAIL_CHARS) this.recentChars -= this.recent.shift()!.length;
  }

  /** The last lines (whole ones: a cut first line is dropped). */
  tail(): string {
    const lines = this.recent.join('').split('\n');
    if (this.recentChars > TAIL_CHARS) lines.shift();
    return lines.join('\n').trimEnd();
  }
}

/** SIGTERM, then SIGKILL if it has not exited after 5 s. */
async function stopChild(proc: ChildProcess, exit: Promise<void>, exited: () => boolean): Promise<void> {
  if (exited()) return;
  proc.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const killed = new Promise<void>((resolve) => {
    timer = setTimeout(() => resolve(void proc.kill('SIGKILL')), 5000);
  });
  await Promise.race([exit, killed]);
  clearTimeout(timer);
  await exit;
}

/** USER_HZ, the unit of /proc/PID/stat times: 100 on every Linux ABI. */
const TICKS_PER_SECOND = 100;

function statCpuMs(statFile: string): number {
  const stat = readFileSync(statFile, 'utf8');
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

/** utime + stime of the whole process (every thread), in ms; 10 ms resolution. */
export function cpuMs(pid: number): number {
  return statCpuMs(`/proc/${pid}/stat`);
}

/** utime + stime of the process's main thread alone (Node's event loop), in ms. */
export function mainThreadCpuMs(pid: number): number {
  return statCpuMs(`/proc/${pid}/task/${pid}/stat`);
}

/** The peak resident set since start or since the last resetPeakRss, MB. */
export function peakRssMb(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** Starts a new peak-RSS window (Linux >= 4.0). Where the kernel refuses, the peak stays the lifetime one. */
export function resetPeakRss(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    // an upper bound is still a fair figure
  }
}

/** CPU time all processes of the machine have used since boot (busy, not idle or waiting), ms. */
export function machineBusyMs(): number {
  // "cpu  user nice system idle iowait irq softirq steal …": steal (time the hypervisor gave others) counts as busy.
  const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').slice(5, 200).trim().split(/\s+/, 8).map(Number);
  return ((user + nice + system + irq + softirq + steal) * 1000) / TICKS_PER_SECOND;
}
