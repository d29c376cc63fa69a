-- paintlockctl holds: every hold, the most urgent first, then the oldest
-- (sql/migrations/0003: paintlock_hold_condition; 0014: paintlock_hold_rank,
-- and `disputed`: a sale whose payment has an open dispute).
-- $1 painting id or NULL; $2 condition or NULL; $3 only holds created at least
-- this many seconds ago, or NULL; $4 seconds a harmless lapsed hold stays listed.
WITH candidates AS (
  SELECT r.id FROM reservations r WHERE r.state IN ('held', 'awaiting_payment', 'refund_pending')
  UNION
  SELECT i.reservation_id
    FROM paintings p
    JOIN reservation_items i ON i.painting_id = p.id
    JOIN reservations r ON r.id = i.reservation_id AND r.state = 'sold'
   WHERE p.sold_at IS NULL
  UNION
  SELECT r.id FROM disputes d JOIN reservations r ON r.payment_intent = d.payment_intent
   WHERE NOT d.closed
), holds AS (
  SELECT r.*,
         coalesce(paintlock_hold_condition(r.id),
                  CASE WHEN dp.id IS NOT NULL THEN 'disputed' END) AS condition,
         dp.id AS dispute_id, dp.status AS dispute_status, dp.reason AS dispute_reason
    FROM reservations r JOIN candidates c ON c.id = r.id
    LEFT JOIN LATERAL (SELECT d.id, d.status, d.reason FROM disputes d
                        WHERE d.payment_intent = r.payment_intent AND NOT d.closed
                        ORDER BY d.opened_at DESC, d.id LIMIT 1) dp ON true
)
SELECT h.id, h.condition, paintlock_hold_rank(h.condition) <= 6 AS stuck, h.state,
       (SELECT json_agg(i.painting_id ORDER BY i.painting_id)
          FROM reservation_items i WHERE i.reservation_id = h.id)::text AS paintings,
       h.stripe_session_id AS session_id, h.stripe_status,
       paintlock_admin_time(h.held_until) AS held_until,
       floor(extract(epoch FROM h.held_until - now()))::bigint AS held_until_in,
       paintlock_admin_time(h.created_at) AS created_at,
       floor(extract(epoch FROM now() - h.created_at))::bigint AS age_seconds,
       h.amount_minor, h.currency, h.buyer_ref, h.dispute_id, h.dispute_status, h.dispute_reason
  FROM holds h
 WHERE h.condition IS NOT NULL
   AND ($1::text IS NULL OR EXISTS (SELECT 1 FROM reservation_items i
                                     WHERE i.reservation_id = h.id AND i.painting_id = $1::text))
   AND ($2::text IS NULL OR h.condition = $2::text)
   AND ($3::bigint IS NULL OR h.created_at <= now() - make_interval(secs => $3::bigint))
   AND (h.condition <> 'lapsed' OR h.held_until > now() - make_interval(secs => $4::bigint))
 ORDER BY paintlock_hold_rank(h.condition), h.created_at, h.id
