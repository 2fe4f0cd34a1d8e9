// `gateway` command line: serve, config check, simulate, and the operator commands of lib/commands.
import type { GatewayConfig } from './config-types.js';
import { ConfigError, configPath, loadConfig } from './config.js';
import type { Gateway } from './gateway.js';
import { stderrLogger, type Logger } from './log.js';
import { ListenError } from './listen-error.js';
import { runSimulatorCli, SIMULATE_DEFAULT_PORT } from './simulator/index.js';
import { operatorCommands } from './commands/index.js';
import { ArgError } from './commands/args.js';
import { commandHelp, commandList, generalHelp, nearest, parseFlags, synopsis, type Args } from './commands/flags.js';
import type { Command, CommandIo } from './commands/types.js';
import { DatabaseInUseError, openStore, StoreError } from './store/index.js';
import type { Store } from './store/types.js';

const builtins: Command[] = [
  {
    name: 'serve',
    summary: 'run the gateway (server.host and server.port of the config)',
    async run(_args, io) {
      try {
        await serve(io.config);
      } catch (err) {
        // Another server on the SQLite file; a PostgreSQL database that cannot be reached or migrated.
        if (err instanceof DatabaseInUseError || err instanceof StoreError) return io.fail(err.message);
        if (err instanceof ListenError) return io.fail(`${err.message}: change ${err.setting} in ${io.config.source}`);
        throw err;
      }
      return 0;
    },
  },
  {
    name: 'config check',
    summary: 'validate the config file and exit (1 and every problem when invalid)',
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

const simulate: Command = {
  name: 'simulate',
  summary: 'run the bundled simulated provider (both formats), for demos and tests',
  noConfig: true,
  flags: [
    { name: 'port', value: 'N', number: 'port', default: String(SIMULATE_DEFAULT_PORT), help: 'the port to listen on (0: any free port)' },
    { name: 'host', value: 'H', default: '127.0.0.1', help: 'the address to listen on' },
    { name: 'api-key', value: 'K', help: 'refuse requests without this key' },
    { name: 'http2', help: 'cleartext HTTP/2 (prior knowledge) instead of HTTP/1.1' },
  ],
  async run(args, io) {
    try {
      await runSimulatorCli({
        port: typeof args.port === 'string' ? Number(args.port) : SIMULATE_DEFAULT_PORT,
        host: typeof args.host === 'string' ? args.host : '127.0.0.1',
        apiKey: typeof args['api-key'] === 'string' ? args['api-key'] : undefined,
        http2: args.http2 === true,
      });
    } catch (err) {
      if (err instanceof ListenError) return io.fail(`${err.message}: choose another with --port N (0 picks a free one)`);
      throw err;
    }
    return 0;
  },
};

const allCommands = (): Command[] => [...builtins, ...operatorCommands, simulate];

async function serve(config: GatewayConfig): Promise<void> {
  // Loaded here: the gateway's modules take most of a second to load, which help and the operator commands do not need.
  const { startGateway } = await import('./gateway.js');
  const gw = await startGateway(config);
  gw.log('info', 'gateway listening', { url: gw.url, config: config.source, simulator: gw.simulator?.url, metrics: gw.metricsUrl });
  if (gw.demo) {
    process.stdout.write(
      `\nDemo account ${config.demo.email} created with $${config.demo.credit_usd} of credit.\n` +
        `Its API key (shown once, keep it):\n\n  ${gw.demo.key}\n\n` +
        `Dashboard: ${gw.url}/dashboard  (log in as ${config.demo.email} with password ${gw.demo.password})\n\n` +
        `Try: curl ${gw.url}/v1/chat/completions -H "Authorization: Bearer ${gw.demo.key}" -H "content-type: application/json" \\\n` +
        `       -d '{"model":"${config.models[0]?.id}","messages":[{"role":"user","content":"Hello"}]}'\n\n`,
    );
  } else if (config.demo.enabled && (await gw.store.accounts.byEmail(config.demo.email).catch(() => null))) {
    // The key was printed once, on the first start; say how to get another instead of nothing.
    const cfg = config.source === configPath() ? '' : ` --config ${config.source}`;
    process.stdout.write(
      `Demo account ${config.demo.email} exists already; its API key was printed on the first start only.\n` +
        `Another key: gateway keys create --account ${config.demo.email} --name NAME${cfg}\n` +
        `A new dashboard password: gateway accounts set-password --email ${config.demo.email} --password P${cfg}\n`,
    );
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.exit(await shutdown(gw, signal, gw.log));
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGHUP', () => void reloadConfig(gw, config.source!, gw.log));
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

/** What the command line asks for: a help text, a usage error, or a command to run. */
export type CommandLine =
  | { kind: 'help'; text: string }
  | { kind: 'usage'; message?: string; hint: string; json: boolean }
  | { kind: 'run'; command: Command; args: Args };

/**
 * Reads `argv`: global flags may come before the command's words; the rest is parsed against the
 * command's declared flags (commands/flags.ts), so an undeclared flag is refused with the nearest one.
 */
export function readCommandLine(argv: string[], commands: Command[] = allCommands()): CommandLine {
  const groups = new Set(commands.filter((c) => c.name.includes(' ')).map((c) => c.name.split(' ')[0]));
  const lead: string[] = []; // global flags before the words, parsed with the command's own
  const words: string[] = [];
  let help = false;
  let i = 0;
  for (; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help' || (a === 'help' && words.length === 0)) help = true;
    else if (a === '--json' || a.startsWith('--config=')) lead.push(a);
    else if (a === '--config') lead.push(...argv.slice(i, ++i + 1));
    else if (a.startsWith('-')) break;
    else {
      words.push(a);
      if (!groups.has(words.join(' '))) {
        i++;
        break;
      }
    }
  }
  const name = words.join(' ');
  const rest = [...lead, ...argv.slice(i)];
  const json = rest.includes('--json');
  const command = commands.find((c) => c.name === name);
  if (!command) {
    const general = generalHelp(commands);
    if (!name) return help ? { kind: 'help', text: general } : { kind: 'usage', hint: general, json };
    if (groups.has(name)) {
      const list = commandList(commands.filter((c) => c.name.startsWith(name + ' ')));
      if (help) return { kind: 'help', text: [`usage: gateway ${name} SUBCOMMAND [options]`, '', 'subcommands:', ...list, '', `\`gateway ${name} SUBCOMMAND --help\` shows its options.`].join('\n') };
      return { kind: 'usage', message: `gateway ${name} needs a subcommand`, hint: ['subcommands:', ...list].join('\n'), json };
    }
    const near = nearest(name, [...commands.map((c) => c.name), ...groups]);
    return { kind: 'usage', message: `unknown command: ${name}${near ? ` (did you mean ${near}?)` : ''}`, hint: '`gateway --help` lists the commands.', json };
  }
  try {
    const args = parseFlags(command, help ? [...rest, '--help'] : rest);
    return args.help ? { kind: 'help', text: commandHelp(command) } : { kind: 'run', command, args };
  } catch (err) {
    if (!(err instanceof ArgError)) throw err;
    return { kind: 'usage', message: err.message, hint: `usage: ${synopsis(command)}\n\`gateway ${command.name} --help\` explains each option.`, json };
  }
}

export async function main(argv: string[]): Promise<number> {
  const line = readCommandLine(argv);
  if (line.kind === 'help') {
    process.stdout.write(line.text + '\n');
    return 0;
  }
  if (line.kind === 'usage') {
    // Exit code 2: the command line itself is wrong (1 is for a command that ran and failed).
    if (line.json && line.message) process.stdout.write(JSON.stringify({ ok: false, error: line.message }) + '\n');
    else process.stderr.write((line.message ? `error: ${line.message}\n` : '') + line.hint + '\n');
    return 2;
  }
  const { command: cmd, args } = line;
  const json = args.json === true;
  if (cmd.noConfig) return cmd.run(args, commandIo(json, undefined, () => undefined));
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
  try {
    return await cmd.run(args, commandIo(json, config, () => (store ??= openStore(config))));
  } finally {
    if (cmd.name !== 'serve') await store?.close();
  }
}

/** Output for a command, and its config and store (a noConfig command has neither). */
function commandIo(json: boolean, config: GatewayConfig | undefined, store: () => Store | undefined): CommandIo {
  const needed = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('this command runs without a config');
    return value;
  };
  return {
    get config() {
      return needed(config);
    },
    json,
    store: () => needed(store()),
    print(value, text) {
      process.stdout.write((json ? JSON.stringify(value, null, 2) : text) + '\n');
    },
    fail(message) {
      if (json) process.stdout.write(JSON.stringify({ ok: false, error: message }) + '\n');
      else process.stderr.write(`error: ${message}\n`);
      return 1;
    },
  };
}
