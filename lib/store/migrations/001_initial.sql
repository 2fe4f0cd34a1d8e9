-- Accounts, keys, routing, the credit journal, holds, payments and request history.
-- Money columns are integer nano-USD (1e-9 USD); times are integer milliseconds since the epoch.
-- Rows written by the batched ledger (holds, charges, cached aggregates, history) carry no foreign
-- keys to accounts or keys: a constraint failure there would fail every later batch with it, and
-- accounts and keys are never deleted.

CREATE TABLE accounts (
  id            INTEGER PRIMARY KEY,
  email         TEXT NOT NULL UNIQUE COLLATE NOCASE,
  password_hash TEXT,                       -- scrypt; null until a dashboard login is set
  created_at    INTEGER NOT NULL
);

CREATE TABLE api_keys (
  id             INTEGER PRIMARY KEY,
  account_id     INTEGER NOT NULL REFERENCES accounts(id),
  name           TEXT NOT NULL,
  prefix         TEXT NOT NULL,             -- display + lookup handle, not secret
  hash           BLOB NOT NULL UNIQUE,      -- sha256 of the full key; the key itself is never stored
  allowed_models TEXT,                      -- JSON array; null = any model
  monthly_limit  INTEGER CHECK (monthly_limit >= 0),
  created_at     INTEGER NOT NULL,
  revoked_at     INTEGER,
  last_used_at   INTEGER
);
CREATE INDEX api_keys_prefix ON api_keys(prefix);
CREATE INDEX api_keys_account ON api_keys(account_id);

CREATE TABLE routing_settings (
  account_id       INTEGER PRIMARY KEY REFERENCES accounts(id),
  allow_models     TEXT,                    -- JSON array; null = any model
  deny_models      TEXT NOT NULL DEFAULT '[]',
  price_cap_input  INTEGER,                 -- nano-USD per token; null = no cap
  price_cap_output INTEGER
);

CREATE TABLE payments (
  id           INTEGER PRIMARY KEY,
  account_id   INTEGER NOT NULL REFERENCES accounts(id),
  provider_ref TEXT NOT NULL UNIQUE,        -- the payment provider's id: one payment, one row
  amount       INTEGER NOT NULL CHECK (amount > 0),
  status       TEXT NOT NULL CHECK (status IN ('pending', 'confirmed', 'failed')),
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL
);

-- Holds end exactly once: 'open' → 'settled' (charged ≤ amount) or 'released'.
-- owner_pid/owner_token identify the process whose memory holds the open hold, so that a later
-- process can release holds of a process that died without touching those of a live one.
CREATE TABLE holds (
  id          TEXT PRIMARY KEY,
  account_id  INTEGER NOT NULL,
  key_id      INTEGER NOT NULL,
  request_id  TEXT,
  amount      INTEGER NOT NULL CHECK (amount >= 0),
  status      TEXT NOT NULL CHECK (status IN ('open', 'settled', 'released')),
  charged     INTEGER NOT NULL DEFAULT 0 CHECK (charged >= 0 AND charged <= amount),
  created_at  INTEGER NOT NULL,
  ended_at    INTEGER,
  owner_pid   INTEGER NOT NULL,
  owner_token TEXT NOT NULL
);
CREATE INDEX holds_open ON holds(status) WHERE status = 'open';

-- The journal is append-only; a balance is the sum of an account's entries.
CREATE TABLE journal (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id INTEGER NOT NULL,
  key_id     INTEGER,
  kind       TEXT NOT NULL CHECK (kind IN ('grant', 'topup', 'charge', 'adjustment')),
  amount     INTEGER NOT NULL,              -- signed: credits > 0, charges < 0
  hold_id    TEXT UNIQUE REFERENCES holds(id),        -- a hold is charged at most once
  payment_id INTEGER UNIQUE REFERENCES payments(id),  -- a payment is credited at most once
  note       TEXT,
  created_at INTEGER NOT NULL,
  CHECK (kind <> 'charge' OR (amount < 0 AND hold_id IS NOT NULL AND key_id IS NOT NULL)),
  CHECK (kind NOT IN ('grant', 'topup') OR amount > 0),
  CHECK (kind <> 'topup' OR payment_id IS NOT NULL)
);
CREATE INDEX journal_account ON journal(account_id, id);
CREATE INDEX journal_key_time ON journal(key_id, created_at) WHERE kind = 'charge';

-- Cached aggregates of the journal, updated in the same transaction as its entries, so that
-- opening the store reads one row per account or key instead of the whole journal.
CREATE TABLE balances (
  account_id INTEGER PRIMARY KEY,
  balance    INTEGER NOT NULL
);
CREATE TABLE key_spend (
  key_id INTEGER NOT NULL,
  month  TEXT NOT NULL,                     -- 'YYYY-MM', UTC, of the charge's time
  spent  INTEGER NOT NULL,
  PRIMARY KEY (key_id, month)
);

CREATE TABLE request_history (
  request_id        TEXT PRIMARY KEY,
  time              INTEGER NOT NULL,
  account_id        INTEGER NOT NULL,
  key_id            INTEGER NOT NULL,
  route             TEXT NOT NULL,
  model             TEXT,
  listing           TEXT,
  attempts          TEXT NOT NULL,          -- JSON array of attempts
  status            TEXT NOT NULL CHECK (status IN ('ok', 'error', 'client_gone')),
  http_status       INTEGER,
  stream            INTEGER NOT NULL,
  input_tokens      INTEGER NOT NULL,
  output_tokens     INTEGER NOT NULL,
  cache_read_tokens INTEGER NOT NULL,
  cache_write_tokens INTEGER NOT NULL,
  hold              INTEGER NOT NULL,
  cost              INTEGER NOT NULL,
  latency_ms        INTEGER NOT NULL,
  ttfb_ms           INTEGER,
  error             TEXT
);
CREATE INDEX request_history_account ON request_history(account_id, time);
