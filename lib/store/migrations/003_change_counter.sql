-- A counter that moves on every change to what the gateway caches about callers: keys, routing
-- settings, accounts. A running gateway reads it when SQLite reports a commit by another
-- connection, so its own writer thread's batches (history, holds, charges, a key's last use) do
-- not empty its caches, while a key revoked from the command line still fails on the next request.
CREATE TABLE change_counter (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  n  INTEGER NOT NULL
);
INSERT INTO change_counter (id, n) VALUES (1, 0);

CREATE TRIGGER api_keys_inserted AFTER INSERT ON api_keys BEGIN UPDATE change_counter SET n = n + 1; END;
-- Every column but last_used_at, which each request's batch updates.
CREATE TRIGGER api_keys_changed AFTER UPDATE OF id, account_id, name, prefix, hash, allowed_models, monthly_limit,
  created_at, revoked_at ON api_keys BEGIN UPDATE change_counter SET n = n + 1; END;
CREATE TRIGGER api_keys_deleted AFTER DELETE ON api_keys BEGIN UPDATE change_counter SET n = n + 1; END;

CREATE TRIGGER routing_inserted AFTER INSERT ON routing_settings BEGIN UPDATE change_counter SET n = n + 1; END;
CREATE TRIGGER routing_changed AFTER UPDATE ON routing_settings BEGIN UPDATE change_counter SET n = n + 1; END;
CREATE TRIGGER routing_deleted AFTER DELETE ON routing_settings BEGIN UPDATE change_counter SET n = n + 1; END;

CREATE TRIGGER accounts_inserted AFTER INSERT ON accounts BEGIN UPDATE change_counter SET n = n + 1; END;
CREATE TRIGGER accounts_changed AFTER UPDATE ON accounts BEGIN UPDATE change_counter SET n = n + 1; END;
CREATE TRIGGER accounts_deleted AFTER DELETE ON accounts BEGIN UPDATE change_counter SET n = n + 1; END;
