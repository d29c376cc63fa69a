-- $1 hold id. state is what the hold is now: a 'held' row past its time is 'expired'.
SELECT h.id, h.account_id, h.amount,
       CASE WHEN h.state = 'held' AND h.expires_at <= now() THEN 'expired' ELSE h.state END AS state,
       paintlock_rfc3339_ms(h.created_at) AS created_at,
       paintlock_rfc3339_ms(h.expires_at) AS expires_at,
       paintlock_rfc3339_ms(h.closed_at) AS closed_at, h.late, h.balance_after,
       floor(extract(epoch FROM h.expires_at - now()))::bigint AS expires_in_seconds
  FROM credit_holds h WHERE h.id = $1::uuid
