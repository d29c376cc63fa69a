-- $1 session id, then (each NULL when Stripe gave none) $2 name, $3 email,
-- $4 phone, $5 shipping name, $6 line1, $7 line2, $8 city, $9 postal code,
-- $10 state, $11 country: a completed session's buyer details. A field
-- already kept is overwritten only by a given value, never by NULL; a
-- forgotten row (sql/migrations/0017) is left as it is.
INSERT INTO sale_contacts AS c (session_id, name, email, phone, shipping_name, line1, line2,
                                city, postal_code, state, country)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (session_id) DO UPDATE
   SET name = coalesce(EXCLUDED.name, c.name),
       email = coalesce(EXCLUDED.email, c.email),
       phone = coalesce(EXCLUDED.phone, c.phone),
       shipping_name = coalesce(EXCLUDED.shipping_name, c.shipping_name),
       line1 = coalesce(EXCLUDED.line1, c.line1),
       line2 = coalesce(EXCLUDED.line2, c.line2),
       city = coalesce(EXCLUDED.city, c.city),
       postal_code = coalesce(EXCLUDED.postal_code, c.postal_code),
       state = coalesce(EXCLUDED.state, c.state),
       country = coalesce(EXCLUDED.country, c.country),
       updated_at = now()
 WHERE c.forgotten_at IS NULL
