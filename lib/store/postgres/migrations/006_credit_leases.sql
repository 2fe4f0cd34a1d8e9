-- Credit leases (lib/store/postgres/leases.ts): a serving node takes a slice of an account's
-- available credit in one call and admits requests against it in memory, with no round trip; the
-- holds it admits that way reach the database only when they end, with the next batch, already
-- ended. The database counts every lease as held, whole, until its node returns what it does not
-- use, a charge spends from it, or a sweep deletes it with its node: available credit is
-- balance − open holds − leases, on every node, so admission stays exact across nodes.
--
-- A lease belongs to an owner: a node id and the generation of its registration ("<node>/<n>"),
-- new whenever the node was taken for dead, so that ends admitted under a swept lease never spend
-- from a lease taken later. `seq` is the owner's last return applied (returns ride on batches, and
-- a batch whose commit was not confirmed is written again: a return is applied once). `in_use` is
-- what the owner's requests hold of it as of its last batch: shown to account owners, never admitted on.
CREATE TABLE leases (
  account_id BIGINT NOT NULL,
  owner      TEXT NOT NULL,
  node_id    TEXT NOT NULL,
  amount     BIGINT NOT NULL CHECK (amount >= 0),
  in_use     BIGINT NOT NULL DEFAULT 0,
  seq        BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (account_id, owner)
);
CREATE INDEX leases_node ON leases(node_id);

-- Credit an account's open holds and leases take, every node's: what admission subtracts from the balance.
CREATE FUNCTION gateway_held(p_account BIGINT) RETURNS BIGINT LANGUAGE sql STABLE AS $$
  SELECT (SELECT COALESCE(SUM(h.amount), 0) FROM holds h WHERE h.account_id = p_account AND h.status = 'open')
       + (SELECT COALESCE(SUM(l.amount), 0) FROM leases l WHERE l.account_id = p_account)
$$;

-- Grow the owner's lease on the account by up to p_want, never by less than p_min (then by
-- nothing): the balances row locked first, as every reserve does, so no two nodes lease the same
-- credit. Returns what was granted and the available credit left.
CREATE FUNCTION gateway_lease(p_account BIGINT, p_owner TEXT, p_node TEXT, p_want BIGINT, p_min BIGINT)
  RETURNS TABLE (granted BIGINT, available BIGINT) LANGUAGE plpgsql AS $$
DECLARE
  v_balance BIGINT;
  v_available BIGINT;
  v_grant BIGINT;
BEGIN
  SELECT b.balance INTO v_balance FROM balances b WHERE b.account_id = p_account FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 0::BIGINT, 0::BIGINT;
    RETURN;
  END IF;
  v_available := v_balance - gateway_held(p_account);
  v_grant := LEAST(p_want, v_available);
  IF v_grant < p_min OR v_grant <= 0 THEN
    RETURN QUERY SELECT 0::BIGINT, GREATEST(0, v_available);
    RETURN;
  END IF;
  INSERT INTO leases AS l (account_id, owner, node_id, amount) VALUES (p_account, p_owner, p_node, v_grant)
    ON CONFLICT (account_id, owner) DO UPDATE SET amount = l.amount + excluded.amount;
  RETURN QUERY SELECT v_grant, v_available - v_grant;
END $$;

-- Admission by the database (keys with a monthly limit, accounts too short of credit to lease, a
-- node not listening): as before, with every node's leases counted as held.
CREATE OR REPLACE FUNCTION gateway_reserve(p_hold TEXT, p_account BIGINT, p_key BIGINT, p_amount BIGINT, p_limit BIGINT,
    p_month TEXT, p_request TEXT, p_now BIGINT, p_node TEXT)
  RETURNS TABLE (reason TEXT, balance BIGINT, available BIGINT, month_to_date BIGINT, key_held BIGINT)
  LANGUAGE plpgsql AS $$
DECLARE
  v_balance BIGINT := 0;
  v_held BIGINT;
  v_key_held BIGINT;
  v_spent BIGINT := 0;
BEGIN
  IF p_amount > 0 THEN
    SELECT b.balance INTO v_balance FROM balances b WHERE b.account_id = p_account FOR UPDATE;
    IF NOT FOUND THEN -- never credited: nothing to spend
      RETURN QUERY SELECT 'insufficient_credit'::TEXT, 0::BIGINT, 0::BIGINT, NULL::BIGINT, NULL::BIGINT;
      RETURN;
    END IF;
  ELSE
    SELECT COALESCE((SELECT b.balance FROM balances b WHERE b.account_id = p_account), 0) INTO v_balance;
  END IF;
  v_held := gateway_held(p_account);
  SELECT COALESCE(SUM(h.amount), 0)::BIGINT INTO v_key_held FROM holds h
    WHERE h.account_id = p_account AND h.key_id = p_key AND h.status = 'open';
  IF p_amount > v_balance AND v_balance - v_held > 0 THEN
    RETURN QUERY SELECT 'hold_too_large_balance'::TEXT, v_balance, v_balance - v_held, NULL::BIGINT, NULL::BIGINT;
    RETURN;
  END IF;
  IF p_amount > v_balance - v_held THEN
    RETURN QUERY SELECT 'insufficient_credit'::TEXT, v_balance, GREATEST(0, v_balance - v_held), NULL::BIGINT, NULL::BIGINT;
    RETURN;
  END IF;
  IF p_limit IS NOT NULL THEN
    IF p_amount > p_limit THEN
      RETURN QUERY SELECT 'hold_too_large_limit'::TEXT, v_balance, v_balance - v_held, NULL::BIGINT, NULL::BIGINT;
      RETURN;
    END IF;
    SELECT COALESCE((SELECT s.spent FROM key_spend s WHERE s.key_id = p_key AND s.month = p_month), 0) INTO v_spent;
    IF v_spent + v_key_held + p_amount > p_limit THEN
      RETURN QUERY SELECT 'monthly_limit_reached'::TEXT, v_balance, v_balance - v_held, v_spent, v_key_held;
      RETURN;
    END IF;
  END IF;
  INSERT INTO holds (id, account_id, key_id, request_id, amount, status, created_at, node_id)
    VALUES (p_hold, p_account, p_key, p_request, p_amount, 'open', p_now, p_node);
  RETURN QUERY SELECT NULL::TEXT, v_balance, v_balance - v_held - p_amount, v_spent, v_key_held + p_amount;
END $$;

CREATE OR REPLACE FUNCTION gateway_reserve_many(p_holds TEXT[], p_accounts BIGINT[], p_keys BIGINT[], p_amounts BIGINT[],
    p_limits BIGINT[], p_requests TEXT[], p_month TEXT, p_now BIGINT, p_node TEXT)
  RETURNS TABLE (i INTEGER, reason TEXT, balance BIGINT, available BIGINT, month_to_date BIGINT, key_held BIGINT)
  LANGUAGE plpgsql AS $$
DECLARE
  v_account BIGINT;
  v_balance BIGINT;
  v_held BIGINT;
  v_amount BIGINT;
  r RECORD;
BEGIN
  FOR n IN 1 .. COALESCE(array_length(p_holds, 1), 0) LOOP
    v_amount := p_amounts[n];
    IF p_limits[n] IS NOT NULL OR v_amount = 0 THEN
      SELECT * INTO r FROM gateway_reserve(p_holds[n], p_accounts[n], p_keys[n], v_amount, p_limits[n],
        p_month, p_requests[n], p_now, p_node);
      IF r.reason IS NULL AND v_account = p_accounts[n] THEN v_held := v_held + v_amount; END IF;
      RETURN QUERY SELECT n, r.reason, r.balance, r.available, r.month_to_date, r.key_held;
      CONTINUE;
    END IF;
    IF v_account IS DISTINCT FROM p_accounts[n] THEN
      v_account := p_accounts[n];
      SELECT b.balance INTO v_balance FROM balances b WHERE b.account_id = v_account FOR UPDATE;
      IF NOT FOUND THEN v_balance := NULL; END IF;
      v_held := gateway_held(v_account);
    END IF;
    IF v_balance IS NULL THEN
      RETURN QUERY SELECT n, 'insufficient_credit'::TEXT, 0::BIGINT, 0::BIGINT, NULL::BIGINT, NULL::BIGINT;
    ELSIF v_amount > v_balance AND v_balance - v_held > 0 THEN
      RETURN QUERY SELECT n, 'hold_too_large_balance'::TEXT, v_balance, v_balance - v_held, NULL::BIGINT, NULL::BIGINT;
    ELSIF v_amount > v_balance - v_held THEN
      RETURN QUERY SELECT n, 'insufficient_credit'::TEXT, v_balance, GREATEST(0, v_balance - v_held), NULL::BIGINT, NULL::BIGINT;
    ELSE
      INSERT INTO holds (id, account_id, key_id, request_id, amount, status, created_at, node_id)
        VALUES (p_holds[n], v_account, p_keys[n], p_requests[n], v_amount, 'open', p_now, p_node);
      v_held := v_held + v_amount;
      RETURN QUERY SELECT n, NULL::TEXT, v_balance, v_balance - v_held, 0::BIGINT, NULL::BIGINT;
    END IF;
  END LOOP;
END $$;
