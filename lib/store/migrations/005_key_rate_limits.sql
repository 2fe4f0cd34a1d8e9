-- A key's own rate limits (the rate-limit plugin); NULL = the config's rate_limits defaults.
ALTER TABLE api_keys ADD COLUMN rpm INTEGER CHECK (rpm IS NULL OR rpm > 0);
ALTER TABLE api_keys ADD COLUMN tpm INTEGER CHECK (tpm IS NULL OR tpm > 0);
