-- $1 painting ids (text[]). What the checkout needs to build Stripe line items.
SELECT id, title, price_minor, currency, image_url, description
  FROM paintings WHERE id = ANY ($1::text[]) ORDER BY id
