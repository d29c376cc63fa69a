-- Forgetting a buyer (paintlockctl contacts forget): a buyer's erasure
-- request, or a retention policy run from cron. The sale stays (what was
-- sold, when, for how much: the seller's books); the person's details go.
--
-- sale_contacts.forgotten_at: set when the row's details were blanked. A
-- forgotten row is a tombstone: sale_contact_keep.sql leaves it alone, so a
-- late webhook, the success page, a take-over or reconcile (each of which
-- re-reads the session from Stripe and keeps its buyer details) cannot bring
-- the details back. A session forgotten before its details arrived gets a
-- tombstone row of its own.
ALTER TABLE sale_contacts
  ADD COLUMN forgotten_at timestamptz,
  ADD CONSTRAINT sale_contacts_forgotten_is_blank
    CHECK (forgotten_at IS NULL OR num_nonnulls(name, email, phone, shipping_name, line1, line2,
                                                 city, postal_code, state, country) = 0);
