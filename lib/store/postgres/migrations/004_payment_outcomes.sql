-- Payments say how they ended (issue 19): 'cancelled' when the payer came back from cancelling (the
-- gateway expires the Checkout Session, so it can never be paid later), and failure_reason, the
-- provider's own words on why a payment failed (e.g. "Your card was declined."), NULL when it gave none.
ALTER TABLE payments DROP CONSTRAINT payments_status_check;
ALTER TABLE payments ADD CONSTRAINT payments_status_check CHECK (status IN ('pending', 'confirmed', 'failed', 'cancelled'));
ALTER TABLE payments ADD COLUMN failure_reason TEXT;
