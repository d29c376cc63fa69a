-- $1 account id, $2 true: closed holds too (committed, released, expired).
-- Live holds first (soonest to lapse first), then the newest closed ones.
SELECT h.id, h.account_id, h.amount,
       CASE WHEN h.state = 'held' AND h.expires_at <= now() THEN 'expired' ELSE h.state END AS state,
       paintlock_rfc3339_ms(h.created_at) AS created_at,
       paintlock_rfc3339_ms(h.expires_at) AS expires_at,
       paintlock_rfc3339_ms(h.closed_at) AS closed_at, h.late, h.balance_after,
       floor(extract(epoch FROM h.expires_at - now()))::bigint AS expires_in_seconds
  FROM credit_holds h
 WHERE h.account_id = $1::text
   AND ($2::boolean OR (h.state = 'held' AND h.expires_at > now()))
 ORDER BY (h.state = 'held' AND h.expires_at > now()) DESC,
          CASE WHEN h.state = 'held' AND h.expires_at > now() THEN h.expires_at END,
          h.created_at DESC
 LIMIT 1000
