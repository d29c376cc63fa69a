-- $1 age bound in seconds: what the sweep would delete and clear now, and how
-- many rows older than the bound it keeps because their Stripe session is not
-- known to be over (paintlockctl reconcile learns it).
WITH old AS (
  SELECT r.id, r.state, paintlock_sweepable(r, make_interval(secs => $1::bigint)) AS sweepable,
         r.updated_at < now() - make_interval(secs => $1::bigint)
           AND (r.state IN ('released', 'refunded')
                OR (r.state = 'held' AND r.held_until < now() - make_interval(secs => $1::bigint)))
           AS finished_long_ago
    FROM reservations r
   WHERE r.state IN ('released', 'refunded', 'held'))
SELECT count(*) FILTER (WHERE o.sweepable) AS reservations,
       count(*) FILTER (WHERE o.sweepable AND o.state = 'released') AS released,
       count(*) FILTER (WHERE o.sweepable AND o.state = 'refunded') AS refunded,
       count(*) FILTER (WHERE o.sweepable AND o.state = 'held') AS lapsed,
       (SELECT count(*) FROM reservation_items i JOIN old s ON s.id = i.reservation_id
         WHERE s.sweepable) AS items,
       (SELECT count(*) FROM painting_locks l JOIN reservations h ON h.id = l.holder
         WHERE h.state IN ('released', 'refunded')) AS holders,
       count(*) FILTER (WHERE o.finished_long_ago AND NOT o.sweepable) AS kept_stripe_unknown
  FROM old o
