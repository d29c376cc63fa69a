\set a random(1, :accounts)
SELECT outcome, hold_id, paintlock_rfc3339_ms(expires_at) AS expires_at, available   FROM paintlock_credit_hold(:a::text, 1::bigint, make_interval(secs => 60)) \gset
SELECT outcome, account_id, amount, late, paintlock_rfc3339_ms(committed_at) AS committed_at,        balance_after, paintlock_rfc3339_ms(expires_at) AS expires_at, available   FROM paintlock_credit_commit(:hold_id::uuid) ;
