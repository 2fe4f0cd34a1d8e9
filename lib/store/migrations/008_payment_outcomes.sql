-- Payments say how they ended (issue 19): 'cancelled' when the payer came back from cancelling (the
-- gateway expires the Checkout Session, so it can never be paid later), and failure_reason, the
-- provider's own words on why a payment failed (e.g. "Your card was declined."), NULL when it gave
-- none. SQLite cannot change a CHECK constraint in place: the table is rebuilt under its name
-- (foreign keys are off while migrating and checked before the migration commits).
CREATE TABLE payments_new (
  id             INTEGER PRIMARY KEY,
  account_id     INTEGER NOT NULL REFERENCES accounts(id),
  provider_ref   TEXT NOT NULL UNIQUE,        -- the payment provider's id: one payment, one row
  amount         INTEGER NOT NULL CHECK (amount > 0),
  status         TEXT NOT NULL CHECK (status IN ('pending', 'confirmed', 'failed', 'cancelled')),
  created_at     INTEGER NOT NULL,
  updated_at     INTEGER NOT NULL,
  method         TEXT NOT NULL DEFAULT 'card' CHECK (method IN ('card', 'stablecoin')),
  failure_reason TEXT
);
INSERT INTO payments_new (id, account_id, provider_ref, amount, status, created_at, updated_at, method)
  SELECT id, account_id, provider_ref, amount, status, created_at, updated_at, method FROM payments;
DROP TABLE payments;
ALTER TABLE payments_new RENAME TO payments;
CREATE INDEX payments_account ON payments(account_id, id);
