// gateway db migrate: apply the store's pending migrations and exit (serve does it too, at start).
import { migrateStore } from '../store/index.js';
import { command } from './args.js';
import type { Command } from './types.js';

export const commands: Command[] = [
  command('db migrate', 'gateway db migrate                        apply pending database migrations and exit', async (_args, io) => {
    const { location, applied } = await migrateStore(io.config);
    io.print({ location, applied },
      applied.length ? `Applied ${applied.length} migration(s) to ${location}: ${applied.join(', ')}.` : `${location} is up to date.`);
    return 0;
  }),
];
