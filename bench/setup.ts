// The gateways under test: a generated JSON config pointing real (not in-process) providers at the
// simulator process, and an account with credit and an API key made with the operator CLI.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { packageRoot } from '../lib/package-root.js';
import { gatewayBin, startChild, type Child } from './procs.js';
import { MODEL_BY_UPSTREAM, PROVIDER_BY_FORMAT } from './scenarios.js';

const run = promisify(execFile);

export const BENCH_EMAIL = 'bench@example.com';
/** The simulator runs without --api-key and accepts any credential; the gateway still sends one. */
export const UPSTREAM_KEY = 'sk-bench-upstream';
/** The plugins left when billing is off: no auth, no hold, no metering. */
export const BILLING_OFF_PLUGINS = ['schema-check', 'offer-pick', 'format-transform'];

const price = (input: number, output: number) => ({ input, output });

/**
 * Each model has an offer per format; the one in the model's name is the cheaper. `storage`: a
 * SQLite file's path, or a PostgreSQL database's URL.
 */
export function gatewayConfig(simUrl: string, storage: string | { postgres: string }, plugins?: string[]): Record<string, unknown> {
  const offers = [];
  for (const [native, model] of Object.entries(MODEL_BY_UPSTREAM)) {
    for (const [format, provider] of Object.entries(PROVIDER_BY_FORMAT)) {
      offers.push({
        listing: `${model}@${provider}`,
        model,
        provider,
        upstream_model: `up-${format}`,
        price: format === native ? price(1, 2) : price(2, 4),
      });
    }
  }
  return {
    server: { host: '127.0.0.1', port: 0, shutdown_grace_ms: 1000 },
    storage: typeof storage === 'string' ? { sqlite: storage } : storage,
    demo: { enabled: false },
    // One key sends the whole load: its limits are checked on every request but never reached.
    rate_limits: { requests_per_minute: 1_000_000_000, tokens_per_minute: 1_000_000_000_000 },
    ...(plugins ? { plugins } : {}),
    providers: [
      { id: PROVIDER_BY_FORMAT.messages, format: 'messages', base_url: simUrl, api_key: UPSTREAM_KEY },
      { id: PROVIDER_BY_FORMAT.chat, format: 'chat', base_url: `${simUrl}/v1`, api_key: UPSTREAM_KEY },
    ],
    models: [
      { id: MODEL_BY_UPSTREAM.chat, context_window: 128_000, max_output_tokens: 4096 },
      { id: MODEL_BY_UPSTREAM.messages, context_window: 200_000, max_output_tokens: 8192 },
    ],
    offers,
  };
}

export function writeConfig(dir: string, name: string, config: Record<string, unknown>): string {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

async function cli(configFile: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await run(process.execPath, [gatewayBin, ...args, '--config', configFile]);
    return stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`gateway ${args.join(' ')} failed: ${(e.stderr || e.stdout || e.message).trim()}`);
  }
}

/** Account with $1,000,000 of credit and a fresh key (`keys create --json` prints {key, secret}). */
export async function createBenchKey(configFile: string): Promise<string> {
  await cli(configFile, ['accounts', 'create', '--email', BENCH_EMAIL]);
  await cli(configFile, ['credits', 'grant', '--account', BENCH_EMAIL, '--amount', '1000000']);
  const out = await cli(configFile, ['keys', 'create', '--account', BENCH_EMAIL, '--name', 'bench', '--json']);
  const secret: unknown = JSON.parse(out).secret;
  if (typeof secret !== 'string' || !secret.startsWith('sk-service-')) throw new Error(`keys create --json printed no secret:\n${out}`);
  return secret;
}

/** The URL that the simulator and the proxy scripts print as their first line. */
const urlLine = (line: string) => /^(http:\/\/\S+)$/.exec(line.trim())?.[1];

export function startSimulatorProcess(): Promise<Child> {
  return startChild('simulator', ['simulate', '--port', '0', '--host', '127.0.0.1'], urlLine);
}

/** A bench script's compiled file (dist/bench), whether the caller runs from there or is a test running the TS source. */
export const benchScript = (file: string) => join(packageRoot(), 'dist', 'bench', file);

/** One of the bench's proxy scripts in front of the simulator. */
function startProxyScript(file: string, name: string, simUrl: string, opts: ChildOptions = {}): Promise<Child> {
  return startChild(name, [simUrl], urlLine, { script: benchScript(file), ...opts });
}

/** The bare node:http pass-through proxy (bare-proxy.ts) in front of the simulator. */
export function startBareProxyProcess(simUrl: string, opts: ChildOptions = {}, name = 'bare-proxy'): Promise<Child> {
  return startProxyScript('bare-proxy.js', name, simUrl, opts);
}

/** The floor proxy (floor-proxy.ts) in front of the simulator. */
export function startFloorProxyProcess(simUrl: string): Promise<Child> {
  return startProxyScript('floor-proxy.js', 'floor-proxy', simUrl);
}

/** Node flags and a stdout reader for one child (startChild). */
export interface ChildOptions {
  nodeFlags?: string[];
  onStdout?: (chunk: string) => void;
}

/** `gateway serve` logs a JSON line {"msg":"gateway listening","url":…} on stderr. */
export function startGatewayProcess(name: string, configFile: string, opts: ChildOptions = {}): Promise<Child> {
  return startChild(name, ['serve', '--config', configFile], (line) => {
    if (!line.includes('gateway listening')) return undefined;
    try {
      return JSON.parse(line).url as string | undefined;
    } catch {
      return undefined;
    }
  }, opts);
}
