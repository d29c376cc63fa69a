-- $1 hold id. Moves the balance at most once; see paintlock_credit_commit.
SELECT outcome, account_id, amount, late, paintlock_rfc3339_ms(committed_at) AS committed_at,
       balance_after, paintlock_rfc3339_ms(expires_at) AS expires_at, available
  FROM paintlock_credit_commit($1::uuid)
