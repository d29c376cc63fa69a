-- $1 reservation id.
SELECT r.id, r.state, r.released_reason, paintlock_rfc3339(r.held_until) AS held_until,
       r.held_until > now() AS hold_live, paintlock_holds_all(r.id) AS holds,
       r.amount_minor, r.currency, r.stripe_session_id, r.stripe_status,
       paintlock_rfc3339(r.created_at) AS created_at,
       (SELECT array_to_json(array_agg(i.painting_id ORDER BY i.painting_id))
          FROM reservation_items i WHERE i.reservation_id = r.id)::text AS paintings
  FROM reservations r WHERE r.id = $1::uuid
