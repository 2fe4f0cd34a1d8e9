// gateway db migrate: apply the store's pending migrations and exit (serve does it too, at start).
// gateway db copy: a whole SQLite store into an empty PostgreSQL store, verified (store/postgres/copy-from-sqlite.ts).
import { DatabaseInUseError, migrateStore, StoreError } from '../store/index.js';
import { CopyMismatch, CopyRefused, copySqliteToPostgres, type CopyReport } from '../store/postgres/copy-from-sqlite.js';
import { formatUsd } from '../store/money.js';
import { command, required, table } from './args.js';
import type { Command } from './types.js';

export const commands: Command[] = [
  command({ name: 'db migrate', summary: 'apply the store\'s pending migrations and exit (serve does it at start too)' }, async (_args, io) => {
    const { location, applied } = await migrateStore(io.config);
    io.print({ location, applied },
      applied.length ? `Applied ${applied.length} migration(s) to ${location}: ${applied.join(', ')}.` : `${location} is up to date.`);
    return 0;
  }),
  command({
    name: 'db copy',
    summary: 'copy a stopped SQLite store into the empty storage.postgres, verified before it commits',
    flags: [{ name: 'from', value: 'FILE', required: true, help: 'the SQLite file of the stopped gateway' }],
  }, async (args, io) => {
    const from = required(args, 'from');
    try {
      const report = await copySqliteToPostgres(from, io.config, (t) => {
        if (!io.json) process.stderr.write(`copied ${t.name}: ${t.rows} rows\n`);
      });
      io.print(report, summary(report, true));
      return 0;
    } catch (err) {
      if (err instanceof CopyMismatch) {
        // --json: one document, the report with the error; text: the summary, then the error.
        if (io.json) return io.print({ ok: false, error: err.message, mismatches: err.mismatches, ...err.report }, ''), 1;
        io.print(null, summary(err.report, false));
        return io.fail(err.message);
      }
      if (err instanceof DatabaseInUseError) return io.fail(`${err.message}: stop that gateway before copying its store`);
      if (err instanceof CopyRefused || err instanceof StoreError) return io.fail(err.message);
      // A row PostgreSQL refuses, a connection lost mid-copy: the transaction was rolled back.
      return io.fail(`db copy failed; nothing was copied: ${(err as Error).message}`);
    }
  }),
];

function summary(r: CopyReport, verified: boolean): string {
  const rows = r.tables.reduce((n, t) => n + t.rows, 0);
  const seconds = r.elapsedMs / 1000;
  const total = Number(r.totalBalanceNano);
  return [
    `${r.from} → ${r.to}`,
    ...(r.migrated.sqlite.length ? [`migrated the SQLite file first: ${r.migrated.sqlite.join(', ')}`] : []),
    ...(r.migrated.postgres.length ? [`migrated the PostgreSQL database first: ${r.migrated.postgres.join(', ')}`] : []),
    table(['table', 'rows', 'sum (nano-USD)'], r.tables.map((t) => [t.name, String(t.rows), t.sumOf ? `${t.sumOf} ${t.sum}` : ''])),
    `${rows} rows in ${seconds.toFixed(1)} s (${Math.round(rows / Math.max(seconds, 0.001))} rows/s); change counter ${r.changeCounter}`,
    ...(r.releasedOpenHolds ? [`${r.releasedOpenHolds} hold(s) left open by the stopped gateway were copied as released (no charge of them was recorded)`] : []),
    (verified ? `${r.accountsVerified} account(s) verified: balances recomputed from the journal agree on both sides and with the stored ones`
      : `${r.accountsVerified} account(s) compared: MISMATCH, rolled back`) +
      `; total balance ${Number.isSafeInteger(total) ? formatUsd(total) : `${r.totalBalanceNano} nano-USD`}`,
  ].join('\n');
}
