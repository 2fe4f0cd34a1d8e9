// Packages that only some configurations use load on first use, not at start: a gateway on SQLite
// without card payments never needs the PostgreSQL client or Stripe's package, and importing them
// costs every process about 8 MB and 18 MB of resident memory (measured: RSS after importing the
// gateway with each stubbed out).
import { createRequire } from 'node:module';
import type PgModule from 'pg';
import type StripeClass from 'stripe';

const require = createRequire(import.meta.url);
let pgModule: typeof PgModule | undefined;
let stripeClass: typeof StripeClass | undefined;

/** The `pg` package (the PostgreSQL store and `db copy`). */
export const loadPg = (): typeof PgModule => (pgModule ??= require('pg') as typeof PgModule);

/** Stripe's client class (card and stablecoin top-ups). */
export const loadStripe = (): typeof StripeClass => (stripeClass ??= require('stripe') as typeof StripeClass);
