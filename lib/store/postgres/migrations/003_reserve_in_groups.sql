-- Admission in groups: the reserves a node receives while its previous admission call is in flight
-- go to the database together, in one call and one transaction (lib/store/postgres/reserve-groups.ts).
-- Each is decided by gateway_reserve exactly as if it were alone, in the order given, so a later
-- one sees the holds of the earlier ones; the node sends them in account order, the order in which
-- every writer locks balances rows, so groups of different nodes never deadlock. The first column
-- is the reserve's position in the arrays (1-based).
CREATE FUNCTION gateway_reserve_many(p_holds TEXT[], p_accounts BIGINT[], p_keys BIGINT[], p_amounts BIGINT[],
    p_limits BIGINT[], p_requests TEXT[], p_month TEXT, p_now BIGINT, p_node TEXT)
  RETURNS TABLE (i INTEGER, reason TEXT, balance BIGINT, available BIGINT, month_to_date BIGINT, key_held BIGINT)
  LANGUAGE plpgsql AS $$
BEGIN
  FOR n IN 1 .. COALESCE(array_length(p_holds, 1), 0) LOOP
    RETURN QUERY SELECT n, r.* FROM gateway_reserve(p_holds[n], p_accounts[n], p_keys[n], p_amounts[n], p_limits[n],
      p_month, p_requests[n], p_now, p_node) r;
  END LOOP;
END $$;
