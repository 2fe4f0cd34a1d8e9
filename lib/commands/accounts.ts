// gateway accounts create --email E [--password P]
import { command, optional, required } from './args.js';
import type { Command } from './types.js';

export const commands: Command[] = [
  command('accounts create', 'gateway accounts create --email E [--password P]', async (args, io) => {
    const account = await io.store().accounts.create({ email: required(args, 'email'), password: optional(args, 'password') });
    io.print(account, `Created account ${account.id} (${account.email})${account.hasPassword ? ' with a dashboard password' : ''}.`);
    return 0;
  }),
];
