-- * cache_write_1h_tokens: of cache_write_tokens (all cache writes), the 1-hour ones, which are
--   priced apart (the vendor bills them at 2× input, 5-minute ones at 1.25×).
-- * not_recorded: a key's refusals (requests refused before any upstream call) past the first few
--   of a minute are not recorded one row each but counted in one summary row per key and minute;
--   not_recorded is that row's count (0 on every other row). Requests per day count it.
ALTER TABLE request_history ADD COLUMN cache_write_1h_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE request_history ADD COLUMN not_recorded INTEGER NOT NULL DEFAULT 0;
