// `gateway` command line: serve, config check, simulate, and the operator commands of lib/commands.
import type { GatewayConfig } from './config-types.js';
import { ConfigError, configPath, loadConfig } from './config.js';
import { startGateway, type Gateway } from './gateway.js';
import { stderrLogger, type Logger } from './log.js';
import { runSimulatorCli } from './simulator/index.js';
import { operatorCommands } from './commands/index.js';
import type { Command, CommandIo } from './commands/types.js';
import { DatabaseInUseError, openStore, StoreError } from './store/index.js';
import type { Store } from './store/types.js';

export type Args = Record<string, string | boolean>;

/** Flags that never take a value: the word after them is the next argument (`--json accounts create`). */
const SWITCHES = new Set(['json', 'help']);

/** `--flag value`, `--flag=value`, bare `--flag` (true); positionals as _0, _1, … */
export function parseArgs(argv: string[]): Args {
  const args: Args = {};
  let pos = 0;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      if (eq !== -1) args[a.slice(2, eq)] = a.slice(eq + 1);
      else if (!SWITCHES.has(a.slice(2)) && i + 1 < argv.length && !argv[i + 1].startsWith('--')) args[a.slice(2)] = argv[++i];
      else args[a.slice(2)] = true;
    } else args[`_${pos++}`] = a;
  }
  return args;
}

const builtins: Command[] = [
  {
    name: 'serve',
    usage: 'gateway serve [--config FILE]            run the gateway',
    async run(_args, io) {
      try {
        await serve(io.config);
      } catch (err) {
        // Another server on the SQLite file; a PostgreSQL database that cannot be reached or migrated.
        if (err instanceof DatabaseInUseError || err instanceof StoreError) return io.fail(err.message);
        throw err;
      }
      return 0;
    },
  },
  {
    name: 'config check',
    usage: 'gateway config check [--config FILE]     validate the config file and exit',
    async run(_args, io) {
      const c = io.config;
      io.print(
        { ok: true, source: c.source, providers: c.providers.length, models: c.models.length, offers: c.offers.length },
        `${c.source}: OK (${c.providers.length} providers, ${c.models.length} models, ${c.offers.length} offers)`,
      );
      return 0;
    },
  },
];

const allCommands = (): Command[] => [...builtins, ...operatorCommands];

function usage(): string {
  return [
    'usage: gateway COMMAND [options]   (every command takes --config FILE and --json)',
    '',
    ...allCommands().map((c) => '  ' + c.usage),
    '  gateway simulate --port N [--host H]      run the bundled simulated provider (both formats)',
  ].join('\n');
}

async function serve(config: GatewayConfig): Promise<void> {
  const gw = await startGateway(config);
  stderrLogger('info', 'gateway listening', { url: gw.url, config: config.source, simulator: gw.simulator?.url, metrics: gw.metricsUrl });
  if (gw.demo) {
    process.stdout.write(
      `\nDemo account ${config.demo.email} created with $${config.demo.credit_usd} of credit.\n` +
        `Its API key (shown once, keep it):\n\n  ${gw.demo.key}\n\n` +
        `Dashboard: ${gw.url}/dashboard  (log in as ${config.demo.email} with password ${gw.demo.password})\n\n` +
        `Try: curl ${gw.url}/v1/chat/completions -H "Authorization: Bearer ${gw.demo.key}" -H "content-type: application/json" \\\n` +
        `       -d '{"model":"${config.models[0]?.id}","messages":[{"role":"user","content":"Hello"}]}'\n\n`,
    );
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.exit(await shutdown(gw, signal));
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGHUP', () => void reloadConfig(gw, config.source!));
}

/**
 * SIGHUP: read the config file again and apply it. Never rejects (a rejection in a signal handler
 * would end the process): any failure is logged and the running config stays.
 */
export async function reloadConfig(gw: Pick<Gateway, 'reload'>, source: string, log: Logger = stderrLogger): Promise<boolean> {
  try {
    const next = loadConfig(source);
    await gw.reload(next);
    log('info', 'config reloaded', { config: next.source });
    return true;
  } catch (e) {
    log('error', 'config reload failed; keeping the previous config', { err: (e as Error).message });
    return false;
  }
}

/** SIGTERM / SIGINT: drain and close. Returns the exit code (1 when closing failed); never rejects. */
export async function shutdown(gw: Pick<Gateway, 'close' | 'config'>, signal: string, log: Logger = stderrLogger): Promise<number> {
  log('info', 'shutting down: draining in-flight requests', { signal, grace_ms: gw.config.server.shutdown_grace_ms });
  try {
    await gw.close();
  } catch (e) {
    log('error', 'shutdown failed', { err: e });
    return 1;
  }
  log('info', 'stopped');
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  if (args._0 === 'simulate') return runSimulatorCli(argv.slice(1)).then(() => 0);
  if (!args._0 || args.help || args._0 === 'help') {
    process.stdout.write(usage() + '\n');
    return args._0 ? 0 : 2;
  }
  const json = args.json === true;
  const two = `${args._0} ${args._1 ?? ''}`;
  const cmd = allCommands().find((c) => c.name === two) ?? allCommands().find((c) => c.name === args._0);
  if (!cmd) {
    process.stderr.write(`unknown command: ${[args._0, args._1].filter(Boolean).join(' ')}\n\n${usage()}\n`);
    return 2;
  }
  // Positionals after the command words are the command's own: shift them to _0, _1, …
  const words = cmd.name.split(' ').length;
  const cmdArgs: Args = {};
  for (const [k, v] of Object.entries(args)) {
    const m = /^_(\d+)$/.exec(k);
    if (!m) cmdArgs[k] = v;
    else if (Number(m[1]) >= words) cmdArgs[`_${Number(m[1]) - words}`] = v;
  }
  let config: GatewayConfig;
  try {
    config = loadConfig(configPath(typeof args.config === 'string' ? args.config : undefined));
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    if (json) process.stdout.write(JSON.stringify({ ok: false, source: e.source, errors: e.problems }) + '\n');
    else process.stderr.write(e.message + '\n');
    return 1;
  }
  let store: Store | undefined;
  const io: CommandIo = {
    config,
    json,
    store: () => (store ??= openStore(config)),
    print(value, text) {
      process.stdout.write((json ? JSON.stringify(value, null, 2) : text) + '\n');
    },
    fail(message) {
      if (json) process.stdout.write(JSON.stringify({ ok: false, error: message }) + '\n');
      else process.stderr.write(`error: ${message}\n`);
      return 1;
    },
  };
  try {
    return await cmd.run(cmdArgs, io);
  } finally {
    if (cmd.name !== 'serve') await store?.close();
  }
}
