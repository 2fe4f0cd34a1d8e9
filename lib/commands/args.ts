// Shared helpers of the operator commands: argument checks, account lookup, error reporting.
import { StoreError, type Account } from '../store/types.js';
import type { Args, CommandSpec, Flag } from './flags.js';
import type { Command, CommandIo } from './types.js';

/**
 * A problem with the command line. Found by the parser (an undeclared flag, a missing value): exit
 * code 2 with the command's usage; found by the command (no such account): `error: …`, exit code 1.
 */
export class ArgError extends Error {}

/** A Command whose run reports ArgError, StoreError and bad amounts (RangeError) through io.fail. */
export function command(spec: CommandSpec, run: (args: Args, io: CommandIo) => Promise<number>): Command {
  return {
    ...spec,
    async run(args, io) {
      try {
        return await run(args, io);
      } catch (err) {
        if (err instanceof ArgError || err instanceof StoreError || err instanceof RangeError) return io.fail(err.message);
        throw err;
      }
    },
  };
}

/** The value of --name (or positional _N); undefined when absent. */
export function optional(args: Args, name: string): string | undefined {
  const v = args[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new ArgError(`--${name} needs a value`);
  return v;
}

export function required(args: Args, name: string, label = `--${name}`): string {
  const v = optional(args, name);
  if (v === undefined || v.trim() === '') throw new ArgError(`${label} is required`);
  return v;
}

/** "a,b" → ['a', 'b'], each a model id of the config. */
export function modelList(io: CommandIo, text: string, flag: string): string[] {
  const ids = text.split(',').map((s) => s.trim()).filter(Boolean);
  const known = new Set(io.config.models.map((m) => m.id));
  const unknown = ids.filter((id) => !known.has(id));
  if (unknown.length) {
    throw new ArgError(`${flag}: unknown model id(s) ${unknown.join(', ')} (known: ${[...known].join(', ') || 'none'})`);
  }
  return ids;
}

/** The number of a flag or positional the parser checked (flags.ts `number: 'positive'`). */
export function positiveInt(text: string, label: string): number {
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text)) || Number(text) < 1) {
    throw new ArgError(`${label} must be a positive integer`);
  }
  return Number(text);
}

/** `--account E`, the account most commands act on (see accountByEmail). */
export const accountFlag: Flag = { name: 'account', value: 'E', required: true, help: 'the account\'s email' };

export async function accountByEmail(io: CommandIo, email: string): Promise<Account> {
  const account = await io.store().accounts.byEmail(email);
  if (!account) throw new ArgError(`no account with email ${email}`);
  return account;
}

export const isoTime = (ms: number | null): string => (ms === null ? '-' : new Date(ms).toISOString());

/** Fixed-width columns for text tables. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  return [header, ...rows].map((r) => r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd()).join('\n');
}
