-- The reservations of a story, oldest first, each with its items and, per
-- item, the lock row's holder and fence (a reservation still holds a painting
-- while the lock names it with the item's fence).
-- $1 painting id or NULL (every reservation that ever had it); $2 reservation
-- id or NULL; $3 Stripe session id or NULL. Disputes and refunds at Stripe
-- join by the payment intent (sql/migrations/0013); the buyer's details by
-- the session (sql/migrations/0016: sale_contacts).
SELECT r.id, r.state, r.released_reason, paintlock_hold_condition(r.id) AS condition,
       r.buyer_ref, r.amount_minor, r.currency, r.stripe_session_id, r.stripe_status,
       r.payment_intent,
       paintlock_admin_time(r.created_at) AS created_at,
       paintlock_admin_time(r.updated_at) AS updated_at,
       paintlock_admin_time(r.held_until) AS held_until, r.held_until > now() AS hold_live,
       paintlock_admin_time(r.sold_at) AS sold_at,
       paintlock_admin_time(r.stripe_expires_at) AS stripe_expires_at,
       paintlock_holds_all(r.id) AS holds,
       (SELECT json_agg(json_build_object('painting', i.painting_id, 'fence', i.fence,
                                          'price_minor', i.price_minor,
                                          'lock_holder', l.holder, 'lock_fence', l.fence)
                        ORDER BY i.painting_id)
          FROM reservation_items i JOIN painting_locks l ON l.painting_id = i.painting_id
         WHERE i.reservation_id = r.id)::text AS items,
       (SELECT json_agg(json_build_object('id', d.id, 'status', d.status, 'reason', d.reason,
                                          'closed', d.closed, 'amount_minor', d.amount_minor,
                                          'currency', d.currency,
                                          'opened_at', paintlock_admin_time(d.opened_at),
                                          'closed_at', paintlock_admin_time(d.closed_at))
                        ORDER BY d.opened_at, d.id)
          FROM disputes d WHERE d.payment_intent = r.payment_intent)::text AS disputes,
       (SELECT max(c.refunded_minor) FROM charge_refunds c
         WHERE c.payment_intent = r.payment_intent) AS refunded_minor,
       (SELECT json_build_object('name', k.name, 'email', k.email, 'phone', k.phone,
                                 'shipping_name', k.shipping_name, 'line1', k.line1,
                                 'line2', k.line2, 'city', k.city, 'postal_code', k.postal_code,
                                 'state', k.state, 'country', k.country,
                                 'recorded_at', paintlock_admin_time(k.recorded_at),
                                 'forgotten_at', paintlock_admin_time(k.forgotten_at))
          FROM sale_contacts k WHERE k.session_id = r.stripe_session_id)::text AS buyer_contact
  FROM reservations r
 WHERE r.id = $2::uuid
    OR r.stripe_session_id = $3::text
    OR r.id IN (SELECT i.reservation_id FROM reservation_items i WHERE i.painting_id = $1::text)
 ORDER BY r.created_at, r.id
