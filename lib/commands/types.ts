// The operator command contract: lib/cli.ts parses argv, loads the config and runs one Command.
import type { GatewayConfig } from '../config-types.js';
import type { Store } from '../store/types.js';

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

export interface Command {
  /** e.g. 'keys create' */
  name: string;
  usage: string;
  /** `--flag value` pairs by flag name, positionals as _0, _1, …; returns the exit code. */
  run(args: Record<string, string | boolean>, io: CommandIo): Promise<number>;
}
