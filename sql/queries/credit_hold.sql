-- $1 account id, $2 amount (whole credits), $3 TTL (s). Locks the account row.
SELECT outcome, hold_id, paintlock_rfc3339_ms(expires_at) AS expires_at, available
  FROM paintlock_credit_hold($1::text, $2::bigint, make_interval(secs => $3::integer))
