-- $1 account id, $2 Idempotency-Key, $3 amount (whole credits), $4 the largest balance allowed.
SELECT outcome, amount, balance_after, paintlock_rfc3339_ms(created_at) AS created_at
  FROM paintlock_credit_topup($1::text, $2::text, $3::bigint, $4::bigint)
