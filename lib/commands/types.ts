// The operator command contract: lib/cli.ts parses argv against a command's declared flags
// (flags.ts), loads the config and runs it.
import type { GatewayConfig } from '../config-types.js';
import type { Store } from '../store/types.js';
import type { Args, CommandSpec } from './flags.js';

export interface CommandIo {
  config: GatewayConfig;
  /** --json: print machine-readable values instead of text. */
  json: boolean;
  /** Opens the store on first use (closed by the caller after the command). */
  store(): Store;
  print(value: unknown, text: string): void;
  /** Report an error; returns the exit code to return. */
  fail(message: string): number;
}

export interface Command extends CommandSpec {
  /** `--flag value` pairs by flag name (only declared ones), positionals as _0, _1, …; returns the exit code. */
  run(args: Args, io: CommandIo): Promise<number>;
}
