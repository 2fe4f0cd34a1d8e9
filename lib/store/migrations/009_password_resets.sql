-- One-time password reset links (issue 19), made by `gateway accounts reset-link`: the link's token
-- is a random secret; only its sha256 is stored. Used or expired ones are deleted.
CREATE TABLE password_resets (
  token_hash BLOB PRIMARY KEY,
  account_id INTEGER NOT NULL REFERENCES accounts(id),
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX password_resets_account ON password_resets(account_id);
-- The settings page lists an account's sessions.
CREATE INDEX dashboard_sessions_account ON dashboard_sessions(account_id);
