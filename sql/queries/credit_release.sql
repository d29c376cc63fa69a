-- $1 hold id.
SELECT outcome, account_id, amount, paintlock_rfc3339_ms(released_at) AS released_at
  FROM paintlock_credit_release($1::uuid)
