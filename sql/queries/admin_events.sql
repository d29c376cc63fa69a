-- paintlockctl events: the newest $4 Stripe events, shown oldest first.
-- $1 session id or NULL; $2 received at or after this instant, or NULL;
-- $3 received at most this many seconds ago, or NULL; $4 how many at most.
SELECT newest.id, newest.type, newest.session_id, newest.reservation_id, newest.outcome,
       paintlock_admin_time(newest.received_at) AS received_at,
       paintlock_admin_time(newest.applied_at) AS applied_at
  FROM (SELECT e.*
          FROM stripe_events e
         WHERE ($1::text IS NULL OR e.session_id = $1::text)
           AND ($2::timestamptz IS NULL OR e.received_at >= $2::timestamptz)
           AND ($3::bigint IS NULL OR e.received_at >= now() - make_interval(secs => $3::bigint))
         ORDER BY e.received_at DESC, e.id DESC
         LIMIT $4::bigint) newest
 ORDER BY newest.received_at, newest.id
