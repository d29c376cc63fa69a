-- $1 account id. Available is computed now from the live holds, never stored.
SELECT a.id, a.balance, s.held, a.balance - s.held AS available,
       paintlock_rfc3339_ms(a.created_at) AS created_at,
       paintlock_rfc3339_ms(a.updated_at) AS updated_at
  FROM credit_accounts a
 CROSS JOIN LATERAL (SELECT paintlock_credit_held(a.id) AS held) s
 WHERE a.id = $1::text
