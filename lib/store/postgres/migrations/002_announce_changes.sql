-- Changes are announced as well as counted: every serving node keeps one connection listening on
-- the channel gateway_changes (lib/store/postgres/listener.ts) and empties its caches as soon as a
-- key, routing setting or account changes anywhere, instead of at its next poll of the counter.
-- The payload is the counter's new value and the schema: channels are per database, so stores in
-- different schemas of one database tell their announcements apart. A notification is sent when
-- the transaction commits, never for one rolled back.
CREATE OR REPLACE FUNCTION gateway_count_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_n BIGINT;
BEGIN
  UPDATE change_counter SET n = n + 1 RETURNING n INTO v_n;
  PERFORM pg_notify('gateway_changes', v_n || ' ' || current_schema());
  RETURN NULL;
END $$;
