-- What a shop needs to fulfil a sale: what Stripe Checkout shows of a
-- painting, and where the buyer wants it sent.
--
-- paintings.image_url and .description: shown by Stripe Checkout
-- (line_items[][price_data][product_data]). Both optional; NULL when absent,
-- never the empty string. The catalogue import (locks::ValidateEntry) checks
-- the same rules first, so these CHECKs only stop what would bypass it.
ALTER TABLE paintings
  ADD COLUMN image_url text
    CHECK (image_url ~ '^https://[^[:space:]]+$' AND length(image_url) <= 2048),
  ADD COLUMN description text CHECK (octet_length(description) BETWEEN 1 AND 1000);

-- sale_contacts: the buyer's name, email, phone and shipping address, as the
-- completed Checkout Session gives them (customer_details and the shipping
-- details), one row per session, kept by whoever applies the completed
-- session first (webhook, success page, take-over, reconcile); later
-- applications fill what was missing and never blank a field. Personal data:
-- read only by paintlockctl show, never logged. Keyed by session, not
-- reservation, so it is kept even for a payment that is refunded (the seller
-- may need to reach that buyer) and joins reservations by stripe_session_id.
CREATE TABLE sale_contacts (
  session_id text PRIMARY KEY CHECK (session_id ~ '^cs_[A-Za-z0-9_]{1,250}$'),
  name text CHECK (octet_length(name) BETWEEN 1 AND 500),
  email text CHECK (octet_length(email) BETWEEN 1 AND 500),
  phone text CHECK (octet_length(phone) BETWEEN 1 AND 500),
  shipping_name text CHECK (octet_length(shipping_name) BETWEEN 1 AND 500),
  line1 text CHECK (octet_length(line1) BETWEEN 1 AND 500),
  line2 text CHECK (octet_length(line2) BETWEEN 1 AND 500),
  city text CHECK (octet_length(city) BETWEEN 1 AND 500),
  postal_code text CHECK (octet_length(postal_code) BETWEEN 1 AND 500),
  state text CHECK (octet_length(state) BETWEEN 1 AND 500),
  country text CHECK (octet_length(country) BETWEEN 1 AND 500),
  recorded_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
