-- Fewer B-trees for the store's writer thread to update per request (each batch writes every page
-- it touches to the WAL):
-- * journal_key_time served no query (a key's month-to-date spend is kept in key_spend).
-- * journal without AUTOINCREMENT: every insert also rewrote its sqlite_sequence row. The journal is
--   append-only (no row is ever deleted), so a plain INTEGER PRIMARY KEY still hands out increasing
--   ids that are never reused, which is what the ledger's read-back of foreign rows relies on.
-- * holds WITHOUT ROWID: one B-tree keyed by the (time-ordered) hold id, not a table plus an index.
-- Both tables are rebuilt under their old names (foreign keys are off while migrating and checked
-- before the migration commits).

CREATE TABLE holds_new (
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
) WITHOUT ROWID;
INSERT INTO holds_new SELECT id, account_id, key_id, request_id, amount, status, charged, created_at, ended_at,
  owner_pid, owner_token FROM holds;

CREATE TABLE journal_new (
  id         INTEGER PRIMARY KEY,
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
INSERT INTO journal_new SELECT id, account_id, key_id, kind, amount, hold_id, payment_id, note, created_at FROM journal;

DROP TABLE journal;
DROP TABLE holds;
ALTER TABLE holds_new RENAME TO holds;
ALTER TABLE journal_new RENAME TO journal;
CREATE INDEX holds_open ON holds(status) WHERE status = 'open';
CREATE INDEX journal_account ON journal(account_id, id);
