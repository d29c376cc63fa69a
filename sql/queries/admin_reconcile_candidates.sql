-- paintlockctl reconcile: every reservation whose Stripe outcome the database
-- does not know, oldest first: lapsed holds whose session it last knew as
-- open, delayed payments settling, refunds owed, and released reservations
-- whose session it last knew as open (a forced release: the buyer may pay).
SELECT r.id, r.state, r.stripe_session_id, r.stripe_status,
       (SELECT json_agg(i.painting_id ORDER BY i.painting_id)
          FROM reservation_items i WHERE i.reservation_id = r.id)::text AS paintings
  FROM reservations r
 WHERE r.stripe_session_id IS NOT NULL
   AND ((r.state = 'held' AND r.held_until <= now() AND coalesce(r.stripe_status, 'open') = 'open')
        OR (r.state = 'released' AND coalesce(r.stripe_status, 'open') = 'open')
        OR r.state IN ('awaiting_payment', 'refund_pending'))
 ORDER BY r.created_at, r.id
