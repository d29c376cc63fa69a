-- Checkouts made while the database was down (PAINTLOCK_ON_DATABASE_DOWN=sell,
-- checkout/offline_checkout.h): the gateway created the Stripe session from
-- its catalogue snapshot, with the cart in the session's metadata and no hold.
-- The database first hears of such a session from its webhook, the success
-- page or paintlockctl reconcile; this applies it as a late payment.
--
-- What must hold:
--   * Only a session that may have been paid (status complete, or an async
--     payment that succeeded) becomes a reservation: an offline session that
--     expired or failed moved nothing, and stays unknown as before.
--   * The reservation is made once, whatever the number and order of the
--     deliveries: its id (chosen by the gateway, in the metadata) and the
--     session id are both unique, and a concurrent twin waits on them and
--     then finds it.
--   * It holds nothing when made (held_until = now(), no lock row names it),
--     so paintlock_apply_session takes its late-payment path: sold if every
--     painting is still free, else refund_needed (the caller refunds once,
--     keyed by the session) — audited either way, and audited as offline.
--   * A cart naming a painting the catalogue does not have (never made by
--     paintlock) is refunded: it cannot be delivered.
CREATE FUNCTION paintlock_apply_offline_session(
    p_event_id text, p_event_type text, p_session text, p_reservation uuid,
    p_status text, p_payment_status text, p_payment_intent text, p_actor text,
    p_delayed_hold interval, p_paintings text[], p_prices bigint[], p_currency text)
RETURNS TABLE (outcome text, reservation_id uuid, payment_intent text)
LANGUAGE plpgsql AS $$
DECLARE
  v_items integer;
BEGIN
  IF (p_status = 'complete' OR p_event_type = 'checkout.session.async_payment_succeeded')
     AND NOT EXISTS (SELECT 1 FROM reservations r WHERE r.stripe_session_id = p_session) THEN
    INSERT INTO reservations (id, state, held_until, amount_minor, currency, stripe_session_id,
                              stripe_status)
    SELECT p_reservation, 'held', now(), sum(w.price), p_currency, p_session, 'open'
      FROM unnest(p_prices) AS w (price)
    ON CONFLICT DO NOTHING;
    IF FOUND THEN
      INSERT INTO reservation_items (reservation_id, painting_id, fence, price_minor)
      SELECT p_reservation, w.id, 0, w.price
        FROM unnest(p_paintings, p_prices) AS w (id, price)
       WHERE EXISTS (SELECT 1 FROM paintings p WHERE p.id = w.id);
      GET DIAGNOSTICS v_items = ROW_COUNT;
      INSERT INTO audit_log (actor, action, reservation_id, session_id, reason, details)
      VALUES (p_actor, 'offline_sale_recorded', p_reservation, p_session,
              'checkout made while the database was down (PAINTLOCK_ON_DATABASE_DOWN=sell); '
              'applied as a late payment',
              jsonb_build_object('paintings', to_jsonb(p_paintings),
                                 'prices_minor', to_jsonb(p_prices), 'currency', p_currency,
                                 'event_id', p_event_id));
      IF v_items < cardinality(p_paintings) THEN
        UPDATE reservations r SET state = 'refund_pending', payment_intent = p_payment_intent,
                                  updated_at = now()
         WHERE r.id = p_reservation;
        INSERT INTO audit_log (actor, action, reservation_id, session_id, reason, details)
        VALUES (p_actor, 'late_payment_refund_decided', p_reservation, p_session,
                'an offline sale names a painting the catalogue does not have',
                jsonb_build_object('payment_intent', p_payment_intent, 'event_id', p_event_id));
      END IF;
    END IF;
  END IF;
  RETURN QUERY SELECT a.outcome, a.reservation_id, a.payment_intent
    FROM paintlock_apply_session(p_event_id, p_event_type, p_session, p_reservation, p_status,
                                 p_payment_status, p_payment_intent, p_actor, p_delayed_hold) a;
END;
$$;
