// gateway keys create | list | revoke
import { formatUsd, parseUsd } from '../store/money.js';
import type { ApiKeyRecord } from '../store/types.js';
import { accountByEmail, accountFlag, ArgError, command, isoTime, modelList, optional, positiveInt, required, table } from './args.js';
import type { Command } from './types.js';

const display = (k: ApiKeyRecord) => `${k.prefix}…`;

/** A key's own rate limit, or the config default it falls back to. */
const rateText = (own: number | null, fallback: number | undefined) =>
  own !== null ? String(own) : fallback === undefined ? 'default' : `${fallback} (default)`;

export const commands: Command[] = [
  command({
    name: 'keys create',
    summary: 'create an API key for an account; prints the key once',
    flags: [
      accountFlag,
      { name: 'name', value: 'N', required: true, help: 'a name for the key (shown in lists and the dashboard)' },
      { name: 'models', value: 'ID,ID', help: 'the model ids it may use (default: any)' },
      { name: 'monthly-limit', value: 'USD', help: 'most it may spend in a calendar month (default: no limit)' },
      { name: 'rpm', value: 'N', number: 'positive', help: 'its requests per minute (default: rate_limits of the config)' },
      { name: 'tpm', value: 'N', number: 'positive', help: 'its tokens per minute (default: rate_limits of the config)' },
    ],
  }, async (args, io) => {
    const account = await accountByEmail(io, required(args, 'account'));
    const models = optional(args, 'models');
    const limit = optional(args, 'monthly-limit');
    const rpm = optional(args, 'rpm');
    const tpm = optional(args, 'tpm');
    const { key, secret } = await io.store().keys.create({
      accountId: account.id,
      name: required(args, 'name'),
      allowedModels: models === undefined ? null : modelList(io, models, '--models'),
      monthlyLimitNano: limit === undefined ? null : parseUsd(limit),
      rpm: rpm === undefined ? null : positiveInt(rpm, '--rpm'),
      tpm: tpm === undefined ? null : positiveInt(tpm, '--tpm'),
    });
    io.print({ key, secret },
      `Created key ${key.id} "${key.name}" for ${account.email}` +
      (key.allowedModels ? `, models: ${key.allowedModels.join(', ')}` : '') +
      (key.monthlyLimitNano !== null ? `, monthly limit ${formatUsd(key.monthlyLimitNano)}` : '') +
      (key.rpm !== null ? `, ${key.rpm} requests per minute` : '') +
      (key.tpm !== null ? `, ${key.tpm} tokens per minute` : '') +
      `.\nAPI key (shown only this once; store it now):\n\n  ${secret}\n`);
    return 0;
  }),

  command({ name: 'keys list', summary: 'list an account\'s API keys, with this month\'s spend', flags: [accountFlag] }, async (args, io) => {
    const account = await accountByEmail(io, required(args, 'account'));
    const store = io.store();
    const keys = await store.keys.list(account.id);
    const rows = await Promise.all(keys.map(async (k) => ({ ...k, monthToDateNano: await store.ledger.monthToDate(k.id) })));
    const defaults = io.config.rate_limits;
    io.print(rows, rows.length === 0 ? `${account.email} has no API keys.` : table(
      ['ID', 'NAME', 'KEY', 'MODELS', 'MONTHLY LIMIT', 'THIS MONTH', 'RPM', 'TPM', 'LAST USED', 'STATUS'],
      rows.map((k) => [String(k.id), k.name, display(k), k.allowedModels?.join(',') ?? 'any',
        k.monthlyLimitNano === null ? 'none' : formatUsd(k.monthlyLimitNano), formatUsd(k.monthToDateNano),
        rateText(k.rpm, defaults?.requests_per_minute), rateText(k.tpm, defaults?.tokens_per_minute),
        isoTime(k.lastUsedAt), k.revokedAt === null ? 'active' : `revoked ${isoTime(k.revokedAt)}`]),
    ));
    return 0;
  }),

  command({
    name: 'keys revoke',
    summary: 'revoke an API key (refused from the next request on)',
    positionals: [{ name: 'KEY_ID', number: 'positive', help: 'the key\'s id (the ID column of keys list)' }],
  }, async (args, io) => {
    const id = positiveInt(required(args, '_0', 'KEY_ID'), 'KEY_ID');
    const store = io.store();
    const key = await store.keys.get(id);
    if (!key) throw new ArgError(`no key with id ${id}`);
    if (!(await store.keys.revoke(id))) throw new ArgError(`key ${id} (${display(key)}) was already revoked`);
    io.print({ ...key, revokedAt: (await store.keys.get(id))!.revokedAt },
      `Revoked key ${id} "${key.name}" (${display(key)}); it is refused from the next request on.`);
    return 0;
  }),
];
