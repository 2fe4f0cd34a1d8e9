// A private PostgreSQL server for one test: its own data directory in a temp folder, on a free port
// of 127.0.0.1 with trust authentication, that the test may stop (fast, or immediate as a crash)
// and start again without disturbing the shared server other tests use at the same time. Removed
// at the end of the test, even when it fails. The binaries are PostgreSQL 15's (another folder with
// GATEWAY_TEST_POSTGRES_BIN). PostgreSQL refuses to run as root: as root the commands run as the
// `postgres` OS user. Where PostgreSQL is required (GATEWAY_REQUIRE_POSTGRES=1) missing binaries
// fail the test with the reason instead of skipping it.
import { execFile, execFileSync } from 'node:child_process';
import { accessSync, chownSync, constants, mkdtempSync, rmSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Test } from 'tap';

const run = promisify(execFile);
const BIN = process.env.GATEWAY_TEST_POSTGRES_BIN ?? '/usr/lib/postgresql/15/bin';
const required = process.env.GATEWAY_REQUIRE_POSTGRES === '1';
const asRoot = process.getuid?.() === 0;

export interface PrivatePostgres {
  port: number;
  /** The URL of `database` (default postgres) on this server, as user postgres. */
  url(database?: string): string;
  /** pg_ctl stop: 'fast' (sessions ended, a clean shutdown) or 'immediate' (no shutdown: a crash, recovery at the next start). */
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  /** Start again on the same port and data; resolves once it accepts connections. */
  start(): Promise<void>;
}

/** Why the private-server tests skip here, or false when they run (never skipped where PostgreSQL is required). */
export function privatePostgresSkip(): string | false {
  const missing = ['initdb', 'pg_ctl', 'postgres'].filter((b) => {
    try {
      accessSync(join(BIN, b), constants.X_OK);
      return false;
    } catch {
      return true;
    }
  });
  if (missing.length === 0) return false;
  const why = `PostgreSQL server binaries (${missing.join(', ')}) not found in ${BIN} (install postgresql-15, or set GATEWAY_TEST_POSTGRES_BIN)`;
  if (required) throw new Error(`PostgreSQL is required (GATEWAY_REQUIRE_POSTGRES=1) but ${why}`);
  return why;
}

/** `bin args…`, as the postgres OS user when this process is root. */
function pgCommand(bin: string, args: string[]) {
  const path = join(BIN, bin);
  return run(asRoot ? 'runuser' : path, asRoot ? ['-u', 'postgres', '--', path, ...args] : args);
}

/** A port free on 127.0.0.1 a moment ago (PostgreSQL cannot take port 0; start() retries if another process took it since). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A new server, initialised and started; stopped and removed at the end of `t`. */
export async function startPrivatePostgres(t: Test): Promise<PrivatePostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-pg-'));
  const data = join(dir, 'data');
  const removeAll = () => {
    // Synchronous, so that it also runs from the 'exit' handler should the test process end early.
    try {
      if (asRoot) execFileSync('runuser', ['-u', 'postgres', '--', join(BIN, 'pg_ctl'), 'stop', '-D', data, '-m', 'immediate', '-w'], { stdio: 'ignore' });
      else execFileSync(join(BIN, 'pg_ctl'), ['stop', '-D', data, '-m', 'immediate', '-w'], { stdio: 'ignore' });
    } catch {
      // not running
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', removeAll);
  t.teardown(() => {
    process.off('exit', removeAll);
    removeAll();
  });
  if (asRoot) {
    const [uid, gid] = ['-u', '-g'].map((f) => Number(execFileSync('id', [f, 'postgres'], { encoding: 'utf8' })));
    chownSync(dir, uid, gid);
  }
  // --no-sync and fsync=off: a test's data need not survive the machine, only the server (a stop,
  // even immediate, leaves what was written in the operating system's cache).
  await pgCommand('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions']);

  let port = 0;
  const start = async () => {
    await pgCommand('pg_ctl', ['start', '-D', data, '-w', '-t', '30', '-l', join(dir, 'server.log'),
      '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off`]);
  };
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    try {
      await start();
      break;
    } catch (err) {
      if (attempt === 3) throw new Error(`the private PostgreSQL did not start: ${(err as Error).message}`);
    }
  }
  return {
    port,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    stop: async (mode) => void (await pgCommand('pg_ctl', ['stop', '-D', data, '-m', mode, '-w', '-t', '30'])),
    start,
  };
}
