-- $1 Stripe session ids (text[]), $2 reservation ids (uuid[]): the Stripe
-- events received for them, in the order they arrived.
SELECT e.id, e.type, e.session_id, e.reservation_id, e.outcome,
       paintlock_admin_time(e.received_at) AS received_at,
       paintlock_admin_time(e.applied_at) AS applied_at
  FROM stripe_events e
 WHERE e.session_id = ANY ($1::text[]) OR e.reservation_id = ANY ($2::uuid[])
 ORDER BY e.received_at, e.id
