// gateway accounts create | set-password | reset-link
import { RESET_TTL_MS, resetLink } from '../dashboard/reset-link.js';
import { passwordProblem } from '../store/password.js';
import { accountByEmail, ArgError, command, optional, required } from './args.js';
import type { Command } from './types.js';

/** The dashboard's password rule (store/password.ts), for --password. */
function checkedPassword(password: string | undefined): string | undefined {
  const problem = password === undefined ? undefined : passwordProblem(password);
  if (problem) throw new ArgError(`--password: ${problem} (the dashboard's rule)`);
  return password;
}

export const commands: Command[] = [
  command({
    name: 'accounts create',
    summary: 'create an account; with --password it can log in to the dashboard',
    flags: [
      { name: 'email', value: 'E', required: true, help: 'the account\'s email (its name everywhere else)' },
      { name: 'password', value: 'P', help: 'a dashboard password, at least 8 characters' },
    ],
  }, async (args, io) => {
    const email = required(args, 'email');
    const password = checkedPassword(optional(args, 'password'));
    const account = await io.store().accounts.create({ email, password });
    io.print(account, `Created account ${account.id} (${account.email})${account.hasPassword ? ' with a dashboard password' : ''}.`);
    return 0;
  }),

  command({
    name: 'accounts set-password',
    summary: 'set an account\'s dashboard password and log out its dashboard sessions (recovery)',
    flags: [
      { name: 'email', value: 'E', required: true, help: 'the account\'s email' },
      { name: 'password', value: 'P', required: true, help: 'the new dashboard password, at least 8 characters' },
    ],
  }, async (args, io) => {
    const password = checkedPassword(required(args, 'password'))!;
    const account = await accountByEmail(io, required(args, 'email'));
    const { sessionsEnded } = await io.store().accounts.setPassword(account.id, password);
    io.print({ id: account.id, email: account.email, hasPassword: true, sessionsEnded },
      `Set the dashboard password of ${account.email}; ${sessionsEnded} dashboard session(s) ended.`);
    return 0;
  }),

  command({
    name: 'accounts reset-link',
    summary: 'print a one-time link (valid 1 hour) with which the account owner sets a new dashboard password',
    flags: [
      { name: 'email', value: 'E', required: true, help: 'the account\'s email' },
      { name: 'base-url', value: 'URL', help: 'the address people reach the dashboard at', default: 'dashboard.public_url, else the link\'s path only' },
    ],
  }, async (args, io) => {
    const base = optional(args, 'base-url') ?? io.config.dashboard.public_url;
    if (base !== undefined && !/^https?:\/\/[^\s/]+/.test(base)) throw new ArgError(`--base-url: "${base}" is not an http(s) address`);
    const account = await accountByEmail(io, required(args, 'email'));
    const { token, expiresAt } = await io.store().passwordResets.create(account.id, RESET_TTL_MS);
    const link = resetLink(token, base);
    io.print({ id: account.id, email: account.email, link, expiresAt: new Date(expiresAt).toISOString() },
      `Reset link for ${account.email} (works once, until ${new Date(expiresAt).toISOString()}; an earlier link stops working):\n${link}`);
    return 0;
  }),
];
