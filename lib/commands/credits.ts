// gateway credits grant | show
import { formatUsd, parseUsd } from '../store/money.js';
import { accountByEmail, accountFlag, ArgError, command, isoTime, optional, required, table } from './args.js';
import type { Command } from './types.js';

export const commands: Command[] = [
  command({
    name: 'credits grant',
    summary: 'add credit to an account',
    flags: [
      accountFlag,
      { name: 'amount', value: 'USD', required: true, help: 'USD, e.g. 25 or 2.50' },
      { name: 'note', value: 'TEXT', help: 'kept with the journal entry' },
    ],
  }, async (args, io) => {
    const account = await accountByEmail(io, required(args, 'account'));
    const amount = parseUsd(required(args, 'amount'));
    if (amount === 0) throw new ArgError('--amount must be above zero');
    const ledger = io.store().ledger;
    const entry = await ledger.grant(account.id, amount, optional(args, 'note'));
    const { balance } = await ledger.balance(account.id);
    io.print({ entry, balanceNano: balance },
      `Granted ${formatUsd(amount)} to ${account.email}; balance is now ${formatUsd(balance)}.`);
    return 0;
  }),

  command({
    name: 'credits show',
    summary: 'balance, held by requests in flight (a running server\'s too), available; the last journal entries',
    flags: [accountFlag],
  }, async (args, io) => {
    const account = await accountByEmail(io, required(args, 'account'));
    const ledger = io.store().ledger;
    // Held counts the open holds of a gateway serving from the same database (requests in flight).
    const { balance, held, available } = await ledger.balance(account.id);
    const entries = await ledger.entries(account.id, { limit: 20 });
    io.print({
      account: account.email,
      balanceNano: balance, balance: formatUsd(balance),
      heldNano: held, held: formatUsd(held),
      availableNano: available, available: formatUsd(available),
      entries,
    },
    `${account.email}: balance ${formatUsd(balance)}, held ${formatUsd(held)} by requests in progress, available ${formatUsd(available)}\n` +
      (entries.length === 0 ? 'No journal entries.' :
        `Last ${entries.length} journal entries:\n` + table(['ID', 'TIME', 'KIND', 'AMOUNT', 'NOTE'],
          entries.map((e) => [String(e.id), isoTime(e.createdAt), e.kind, formatUsd(e.amountNano), e.note ?? '']))));
    return 0;
  }),
];
