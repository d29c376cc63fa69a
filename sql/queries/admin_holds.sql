-- paintlockctl holds: every hold, the most urgent first, then the oldest
-- (sql/migrations/0014: paintlock_hold_conditions, paintlock_hold_is_stuck;
-- 0013: paintlock_hold_rank, and `disputed`: a sale whose payment has an open dispute).
-- $1 painting id or NULL; $2 condition or NULL; $3 only holds created at least
-- this many seconds ago, or NULL; $4 seconds a harmless lapsed hold stays listed.
WITH holds AS (
  SELECT r.*, hc.condition,
         dp.id AS dispute_id, dp.status AS dispute_status, dp.reason AS dispute_reason
    FROM paintlock_hold_conditions hc JOIN reservations r ON r.id = hc.id
    LEFT JOIN LATERAL (SELECT d.id, d.status, d.reason FROM disputes d
                        WHERE d.payment_intent = r.payment_intent AND NOT d.closed
                        ORDER BY d.opened_at DESC, d.id LIMIT 1) dp ON true
)
SELECT h.id, h.condition, paintlock_hold_is_stuck(h.condition) AS stuck, h.state,
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
