-- The holds that need watching, each with its condition, in one place for
-- both readers: paintlockctl holds (sql/queries/admin_holds.sql) and
-- GET /metrics (sql/queries/metrics_holds.sql).
--
-- Candidates: unsettled reservations (the reservations_live and
-- reservations_unsettled indexes), sales whose catalogue flag is missing, and
-- sales whose payment has an open dispute (0013). A candidate's condition is
-- paintlock_hold_condition's (0003), or `disputed`; NULL when it needs nothing.
CREATE VIEW paintlock_hold_conditions AS
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
)
SELECT r.id,
       coalesce(paintlock_hold_condition(r.id),
                CASE WHEN EXISTS (SELECT 1 FROM disputes d
                                   WHERE d.payment_intent = r.payment_intent AND NOT d.closed)
                     THEN 'disputed' END) AS condition
  FROM reservations r JOIN candidates c ON c.id = r.id;

-- Whether a condition is stuck: someone must act (paintlock_hold_rank, 0013).
CREATE FUNCTION paintlock_hold_is_stuck(p_condition text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT paintlock_hold_rank(p_condition) <= 6;
$$;
