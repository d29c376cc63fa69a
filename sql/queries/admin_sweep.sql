-- $1 age bound in seconds, $2 batch size: one batch of the sweep.
SELECT reservations_deleted, released_deleted, refunded_deleted, lapsed_deleted, items_deleted,
       holders_cleared
  FROM paintlock_admin_sweep(make_interval(secs => $1::bigint), $2::integer)
