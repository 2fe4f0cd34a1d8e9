-- Admission in groups: the reserves a node receives while its previous admission call is in flight
-- go to the database together, in one call and one transaction (lib/store/postgres/reserve-groups.ts).
-- Each is decided exactly as gateway_reserve decides it alone, in the order given, so a later one
-- sees the holds of the earlier ones; the node sends them in account order, the order in which
-- every writer locks balances rows, so groups of different nodes never deadlock. What a group
-- saves: an account's balance row is locked and its open holds summed once per group, not once per
-- reserve (that sum, over every open hold of the account, was most of a reserve's cost under load).
-- A key's limit and a zero hold (rare) are decided by gateway_reserve itself. The first column is
-- the reserve's position in the arrays (1-based).
CREATE FUNCTION gateway_reserve_many(p_holds TEXT[], p_accounts BIGINT[], p_keys BIGINT[], p_amounts BIGINT[],
    p_limits BIGINT[], p_requests TEXT[], p_month TEXT, p_now BIGINT, p_node TEXT)
  RETURNS TABLE (i INTEGER, reason TEXT, balance BIGINT, available BIGINT, month_to_date BIGINT, key_held BIGINT)
  LANGUAGE plpgsql AS $$
DECLARE
  v_account BIGINT;   -- the account whose balance row this call has locked and whose open holds it summed
  v_balance BIGINT;   -- its balance; NULL: never credited
  v_held BIGINT;      -- its open holds, those this call inserted included
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
      SELECT COALESCE(SUM(h.amount), 0)::BIGINT INTO v_held FROM holds h WHERE h.account_id = v_account AND h.status = 'open';
    END IF;
    -- The checks and figures of gateway_reserve (migration 001), in its order.
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
