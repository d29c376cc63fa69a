-- $1 reservation id, $2 Stripe session id, $3 the session's expires_at (unix seconds).
SELECT paintlock_attach_session($1::uuid, $2::text, to_timestamp($3::bigint)) AS attached
