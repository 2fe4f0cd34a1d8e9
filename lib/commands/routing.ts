// gateway routing set: allowed/denied models and price caps of an account.
import type { RoutingSettings } from '../context.js';
import { formatUsdPerMillion, parseUsdPerMillion } from '../store/money.js';
import { accountByEmail, accountFlag, command, modelList, optional, required } from './args.js';
import type { Command } from './types.js';

/** An empty value or "none" clears a setting. */
const cleared = (v: string) => v.trim() === '' || v.trim().toLowerCase() === 'none';

function describe(r: RoutingSettings): string {
  const cap = (v: number | null) => (v === null ? 'none' : `$${formatUsdPerMillion(v)} per million tokens`);
  return [
    `  allowed models: ${r.allow === null ? 'any' : r.allow.join(', ') || 'none'}`,
    `  denied models:  ${r.deny.join(', ') || 'none'}`,
    `  price cap, input:  ${cap(r.priceCapInput)}`,
    `  price cap, output: ${cap(r.priceCapOutput)}`,
  ].join('\n');
}

export const commands: Command[] = [
  command({
    name: 'routing set',
    summary: 'which models an account may use and the most it pays per million tokens ("none" clears a setting)',
    flags: [
      accountFlag,
      { name: 'allow', value: 'ID,ID', help: 'only these model ids' },
      { name: 'deny', value: 'ID,ID', help: 'never these model ids' },
      { name: 'price-cap-input', value: 'USD', help: 'skip offers whose input price per million tokens is higher' },
      { name: 'price-cap-output', value: 'USD', help: 'skip offers whose output price per million tokens is higher' },
    ],
  }, async (args, io) => {
    const account = await accountByEmail(io, required(args, 'account'));
    const patch: Partial<RoutingSettings> = {};
    const allow = optional(args, 'allow');
    const deny = optional(args, 'deny');
    const capIn = optional(args, 'price-cap-input');
    const capOut = optional(args, 'price-cap-output');
    if (allow !== undefined) patch.allow = cleared(allow) ? null : modelList(io, allow, '--allow');
    if (deny !== undefined) patch.deny = cleared(deny) ? [] : modelList(io, deny, '--deny');
    if (capIn !== undefined) patch.priceCapInput = cleared(capIn) ? null : parseUsdPerMillion(capIn);
    if (capOut !== undefined) patch.priceCapOutput = cleared(capOut) ? null : parseUsdPerMillion(capOut);
    const settings = await io.store().routing.set(account.id, patch);
    io.print(settings, `Routing settings of ${account.email}:\n${describe(settings)}`);
    return 0;
  }),
];
