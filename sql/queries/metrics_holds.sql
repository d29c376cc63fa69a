-- GET /metrics: how many holds are in each condition that needs watching
-- (sql/migrations/0003: paintlock_hold_condition), as paintlockctl holds
-- lists them; lapsed holds with nothing more to happen are not counted.
-- The candidates are admin_holds.sql's: keep the two the same.
-- Reads only unsettled reservations (the reservations_live and
-- reservations_unsettled indexes) and sales whose catalogue flag is missing.
WITH candidates AS (
  SELECT r.id FROM reservations r WHERE r.state IN ('held', 'awaiting_payment', 'refund_pending')
  UNION
  SELECT i.reservation_id
    FROM paintings p
    JOIN reservation_items i ON i.painting_id = p.id
    JOIN reservations r ON r.id = i.reservation_id AND r.state = 'sold'
   WHERE p.sold_at IS NULL
), conditions AS (
  SELECT paintlock_hold_condition(c.id) AS condition FROM candidates c
)
SELECT condition, paintlock_hold_rank(condition) <= 5 AS stuck, count(*)::bigint AS holds
  FROM conditions
 WHERE condition IS NOT NULL AND condition <> 'lapsed'
 GROUP BY condition
