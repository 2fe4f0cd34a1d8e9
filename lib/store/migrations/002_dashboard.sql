-- The dashboard: login sessions, how a payment is made, and the indexes its pages read by.

-- A session cookie's value is a random secret; only its sha256 is stored.
CREATE TABLE dashboard_sessions (
  token_hash BLOB PRIMARY KEY,
  account_id INTEGER NOT NULL REFERENCES accounts(id),
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions(expires_at);

ALTER TABLE payments ADD COLUMN method TEXT NOT NULL DEFAULT 'card' CHECK (method IN ('card', 'stablecoin'));
CREATE INDEX payments_account ON payments(account_id, id);
