// `bin/gateway serve` in a child process, as an operator runs it.
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { testConfigObject } from './gateway.js';

export const gatewayBin = join(import.meta.dirname, '../../bin/gateway');

/** The environment for a child gateway: without the test runner's loaders (it runs the built dist/). */
export function childEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  return env;
}

/** `bin/gateway ARGS` run to its end: exit code, stdout, stderr. */
export function gateway(...args: string[]) {
  const r = spawnSync(process.execPath, [gatewayBin, ...args], { encoding: 'utf8', env: childEnv(), timeout: 30_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/**
 * Writes `dir/name`: the test config on `dir/gw.db` with a demo account of `email` (its key is
 * printed when `serve` starts), changed by `mutate`. Returns the file's path.
 */
export function writeDemoConfig(dir: string, email: string, creditUsd: number, mutate?: (c: Record<string, any>) => void, name = 'gw.json'): string {
  const cfg = testConfigObject(join(dir, 'gw.db'));
  cfg.demo = { enabled: true, email, credit_usd: creditUsd };
  mutate?.(cfg);
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(cfg));
  return file;
}

/** `expectDemoKey`: wait until the one-time demo key has been printed too. */
export async function serveProcess(configFile: string, opts: { expectDemoKey?: boolean } = {}) {
  const child = spawn(process.execPath, [gatewayBin, 'serve', '--config', configFile], { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv() });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (err += c));
  /** Resolves when the gateway's log has a line matching `re` (looking from `offset` on). */
  const logLine = (re: RegExp, offset = 0) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        const m = re.exec(err.slice(offset));
        if (m) {
          child.stderr!.off('data', check);
          resolve(m);
        }
      };
      child.once('exit', (code) => reject(new Error(`gateway exited ${code}: ${err}`)));
      child.stderr!.on('data', check);
      check();
    });
  const m = await logLine(/"msg":"gateway listening","url":"([^"]+)"/);
  if (opts.expectDemoKey && !/sk-service-/.test(out))
    await new Promise<void>((resolve) => {
      const check = () => /sk-service-\w+/.test(out) && (child.stdout!.off('data', check), resolve());
      child.stdout!.on('data', check);
    });
  return {
    child,
    url: m[1],
    /** The demo key printed on first run, if any. */
    key: /(sk-service-[A-Za-z0-9]+)/.exec(out)?.[1] ?? null,
    logLine,
    logSize: () => err.length,
    /** What it printed on stdout so far. */
    output: () => out,
    /** Peak and current resident memory of the gateway process, in bytes (Linux /proc). */
    memory() {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)![1]) * 1024;
      return { peak: kb('VmHWM'), rss: kb('VmRSS') };
    },
  };
}
