// gateway requests show | list: the request history.
import { formatUsd } from '../store/money.js';
import type { HistoryRow } from '../store/types.js';
import { accountByEmail, accountFlag, ArgError, command, isoTime, optional, positiveInt, required, table } from './args.js';
import type { Command } from './types.js';

const tokens = (r: HistoryRow) =>
  `in ${r.usage.input}, out ${r.usage.output}, cache read ${r.usage.cacheRead}, cache write ${r.usage.cacheWrite}` +
  (r.usage.cacheWrite1h > 0 ? ` (1h: ${r.usage.cacheWrite1h})` : '');

function details(r: HistoryRow): string {
  return [
    `request ${r.requestId}`,
    `  time:      ${isoTime(r.time)}`,
    `  account:   ${r.accountId}  key: ${r.keyId}`,
    `  route:     ${r.route}${r.stream ? ' (stream)' : ''}`,
    `  model:     ${r.model ?? '-'}${r.requestedModel ? ` (asked as ${r.requestedModel})` : ''}`,
    `  listing:   ${r.listing ?? '-'}`,
    `  status:    ${r.status} (HTTP ${r.httpStatus ?? '-'})`,
    `  tokens:    ${tokens(r)}`,
    `  hold:      ${formatUsd(r.holdNano)}`,
    `  cost:      ${formatUsd(r.costNano)}`,
    `  latency:   ${Math.round(r.latencyMs)} ms (first byte ${r.ttfbMs === null ? '-' : `${Math.round(r.ttfbMs)} ms`})`,
    ...(r.error ? [`  error:     ${r.error}`] : []),
    `  attempts:`,
    ...(r.attempts.length === 0 ? ['    none'] : r.attempts.map((a, i) =>
      `    ${i + 1}. ${a.listing}: ${a.outcome}${a.status ? ` (HTTP ${a.status})` : ''}${a.reason ? ` - ${a.reason}` : ''}, ${Math.round(a.durationMs)} ms`)),
  ].join('\n');
}

export const commands: Command[] = [
  command({
    name: 'requests show',
    summary: 'one request of the history: model, listing, tokens, cost, every attempt',
    positionals: [{ name: 'REQUEST_ID', help: 'the x-request-id of the response' }],
  }, async (args, io) => {
    const id = required(args, '_0', 'REQUEST_ID');
    const row = await io.store().history.get(id);
    if (!row) throw new ArgError(`no request ${id} in the history`);
    io.print(row, details(row));
    return 0;
  }),

  command({
    name: 'requests list',
    summary: 'an account\'s latest requests',
    flags: [accountFlag, { name: 'limit', value: 'N', number: 'positive', default: '20', help: 'how many (at most 1000)' }],
  }, async (args, io) => {
    const account = await accountByEmail(io, required(args, 'account'));
    const limitText = optional(args, 'limit');
    const limit = limitText === undefined ? 20 : Math.min(1000, positiveInt(limitText, '--limit'));
    const rows = await io.store().history.list(account.id, { limit });
    io.print(rows, rows.length === 0 ? `No requests for ${account.email}.` : table(
      ['TIME', 'REQUEST', 'MODEL', 'LISTING', 'STATUS', 'HTTP', 'COST'],
      rows.map((r) => [isoTime(r.time), r.requestId, r.model ?? '-', r.listing ?? '-', r.notRecorded ? `${r.status}: ${r.error}` : r.status,
        String(r.httpStatus ?? '-'), formatUsd(r.costNano)]),
    ));
    return 0;
  }),
];
