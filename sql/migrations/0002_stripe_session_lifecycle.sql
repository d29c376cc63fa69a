-- The Stripe session lifecycle (DESIGN.md, "Webhooks", "Take-over", "Late
-- payment"): one fulfilment function, applied from webhooks, the success page,
-- take-over and reconciliation alike. Safe to run many times and concurrently:
-- it locks the reservation's lock rows (sorted) before it decides.

ALTER TABLE reservations DROP CONSTRAINT reservations_state_check;
ALTER TABLE reservations ADD CONSTRAINT reservations_state_check
  CHECK (state IN ('held', 'awaiting_payment', 'sold', 'released', 'refund_pending', 'refunded'));

-- True when every painting of p_reservation could be given to it now: not
-- sold, and not held by another reservation, live or lapsed with a Stripe
-- session that may still be paid. The caller holds the lock rows.
CREATE FUNCTION paintlock_all_free_for(p_reservation uuid) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT NOT EXISTS (
    SELECT 1
      FROM reservation_items i
      JOIN painting_locks l ON l.painting_id = i.painting_id
      JOIN paintings p ON p.id = i.painting_id
      LEFT JOIN reservations o ON o.id = l.holder AND o.id <> p_reservation
     WHERE i.reservation_id = p_reservation
       AND (p.sold_at IS NOT NULL
            OR l.sold_until > now()
            OR (o.state IN ('held', 'awaiting_payment')
                AND (l.held_until > now()
                     OR (o.state = 'held' AND o.stripe_session_id IS NOT NULL
                         AND coalesce(o.stripe_status, 'open') = 'open'
                         AND coalesce(o.stripe_expires_at > now(), true))))));
$$;

-- Gives every painting of p_reservation back to it (a late payment or a
-- late delayed-payment completion), releasing the lapsed reservations that had
-- them: they lose all of their paintings. The caller holds the lock rows and
-- checked paintlock_all_free_for.
CREATE FUNCTION paintlock_regrant(p_reservation uuid, p_until timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM reservations r
   WHERE r.id IN (SELECT l.holder FROM painting_locks l JOIN reservation_items i
                    ON i.painting_id = l.painting_id AND i.reservation_id = p_reservation
                   WHERE l.holder IS NOT NULL AND l.holder <> p_reservation)
     AND r.state IN ('held', 'awaiting_payment')
   ORDER BY r.id FOR UPDATE;
  UPDATE reservations r SET state = 'released', released_reason = 'lapsed', updated_at = now()
   WHERE r.id IN (SELECT l.holder FROM painting_locks l JOIN reservation_items i
                    ON i.painting_id = l.painting_id AND i.reservation_id = p_reservation
                   WHERE l.holder IS NOT NULL AND l.holder <> p_reservation)
     AND r.state IN ('held', 'awaiting_payment');
  WITH granted AS (
    UPDATE painting_locks l SET holder = p_reservation, held_until = p_until, fence = l.fence + 1
      FROM reservation_items i
     WHERE i.reservation_id = p_reservation AND i.painting_id = l.painting_id
    RETURNING l.painting_id, l.fence)
  UPDATE reservation_items i SET fence = g.fence
    FROM granted g WHERE i.reservation_id = p_reservation AND i.painting_id = g.painting_id;
END;
$$;

-- Marks a reservation's paintings sold: refused for 24 h by the lock, and for
-- good by the catalogue flag. The caller holds the lock rows.
CREATE FUNCTION paintlock_sell(p_reservation uuid, p_payment_intent text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE painting_locks l SET sold_until = now() + interval '24 hours', held_until = NULL
    FROM reservation_items i
   WHERE i.reservation_id = p_reservation AND i.painting_id = l.painting_id;
  UPDATE paintings p SET sold_at = now(), updated_at = now()
    FROM reservation_items i
   WHERE i.reservation_id = p_reservation AND i.painting_id = p.id AND p.sold_at IS NULL;
  UPDATE reservations r
     SET state = 'sold', sold_at = now(), updated_at = now(),
         payment_intent = coalesce(p_payment_intent, r.payment_intent)
   WHERE r.id = p_reservation;
END;
$$;

-- Applies what Stripe says of a session, once.
--
-- p_event_id / p_event_type: the webhook event (dedup key), or NULL and a
--   pseudo type 'session.retrieved' when the gateway retrieved the session
--   itself (success page, take-over, reconcile).
-- p_status / p_payment_status: the session's status and payment_status.
-- Returns one row: outcome, the reservation, and the payment intent when the
-- outcome is 'refund_needed' (the caller refunds it through Stripe with an
-- idempotency key derived from the session, then calls paintlock_record_refund).
--
-- Outcomes: duplicate, unknown_session, sold, sold_late, already_sold,
-- awaiting_payment, released, refund_needed, already_refunded, no_change.
CREATE FUNCTION paintlock_apply_session(
    p_event_id text, p_event_type text, p_session text, p_reservation uuid,
    p_status text, p_payment_status text, p_payment_intent text, p_actor text,
    p_delayed_hold interval)
RETURNS TABLE (outcome text, reservation_id uuid, payment_intent text)
LANGUAGE plpgsql AS $$
DECLARE
  v_res uuid;
  v_state text;
  v_held_until timestamptz;
  v_outcome text;
  v_paid boolean;
  v_pi text;
BEGIN
  IF p_event_id IS NOT NULL THEN
    INSERT INTO stripe_events (id, type, session_id, outcome)
    VALUES (p_event_id, p_event_type, p_session, 'applying')
    ON CONFLICT (id) DO NOTHING;
    IF NOT FOUND THEN
      -- Seen before. A refund decided then but not yet confirmed is still owed.
      SELECT r.id, r.state, r.payment_intent INTO v_res, v_state, v_pi
        FROM reservations r WHERE r.stripe_session_id = p_session;
      IF v_state = 'refund_pending' THEN
        RETURN QUERY SELECT 'refund_needed'::text, v_res, v_pi;
      ELSE
        RETURN QUERY SELECT 'duplicate'::text, v_res, NULL::text;
      END IF;
      RETURN;
    END IF;
  END IF;

  SELECT r.id INTO v_res FROM reservations r WHERE r.stripe_session_id = p_session;
  IF v_res IS NULL THEN
    -- The gateway may have crashed between Stripe's answer and attaching the
    -- session: the session names its reservation in metadata.
    SELECT r.id INTO v_res FROM reservations r
     WHERE r.id = p_reservation AND r.stripe_session_id IS NULL;
  END IF;
  IF v_res IS NULL THEN
    UPDATE stripe_events SET outcome = 'unknown_session', applied_at = now()
     WHERE id = p_event_id;
    RETURN QUERY SELECT 'unknown_session'::text, NULL::uuid, NULL::text;
    RETURN;
  END IF;

  PERFORM paintlock_lock_reservation(v_res);
  SELECT r.state, r.held_until INTO v_state, v_held_until
    FROM reservations r WHERE r.id = v_res FOR UPDATE;
  UPDATE reservations r
     SET stripe_session_id = p_session,
         stripe_status = coalesce(p_status, r.stripe_status),
         payment_intent = coalesce(p_payment_intent, r.payment_intent),
         updated_at = now()
   WHERE r.id = v_res;

  v_paid := p_event_type = 'checkout.session.async_payment_succeeded'
            OR (p_event_type IN ('checkout.session.completed', 'session.retrieved')
                AND p_status = 'complete' AND p_payment_status IN ('paid', 'no_payment_required'));

  IF v_paid THEN
    IF v_state = 'sold' THEN
      v_outcome := 'already_sold';
    ELSIF v_state = 'refunded' THEN
      v_outcome := 'already_refunded';
    ELSIF v_state = 'refund_pending' THEN
      v_outcome := 'refund_needed';
    ELSIF paintlock_holds_all(v_res) THEN
      PERFORM paintlock_sell(v_res, p_payment_intent);
      v_outcome := CASE WHEN v_held_until <= now() THEN 'sold_late' ELSE 'sold' END;
    ELSIF paintlock_all_free_for(v_res) THEN
      PERFORM paintlock_regrant(v_res, now());
      PERFORM paintlock_sell(v_res, p_payment_intent);
      v_outcome := 'sold_late';
    ELSE
      UPDATE reservations r SET state = 'refund_pending', updated_at = now() WHERE r.id = v_res;
      v_outcome := 'refund_needed';
    END IF;
    IF v_outcome IN ('sold_late', 'refund_needed') AND v_state <> 'refund_pending' THEN
      INSERT INTO audit_log (actor, action, reservation_id, session_id, reason, details)
      VALUES (p_actor,
              CASE v_outcome WHEN 'sold_late' THEN 'late_payment_accepted' ELSE 'late_payment_refund_decided' END,
              v_res, p_session,
              CASE v_outcome WHEN 'sold_late' THEN 'paid after the hold lapsed; the paintings were still free'
                             ELSE 'paid after the hold lapsed; another buyer has a painting' END,
              jsonb_build_object('payment_intent', p_payment_intent, 'event_id', p_event_id));
    END IF;
  ELSIF p_event_type IN ('checkout.session.completed', 'session.retrieved')
        AND p_status = 'complete' AND p_payment_status = 'unpaid' THEN
    -- A delayed payment method: keep holding until it succeeds or fails.
    IF v_state = 'held' AND (paintlock_holds_all(v_res) OR paintlock_all_free_for(v_res)) THEN
      PERFORM paintlock_regrant(v_res, now() + p_delayed_hold);
      UPDATE reservations r SET state = 'awaiting_payment', held_until = now() + p_delayed_hold,
                                updated_at = now()
       WHERE r.id = v_res;
      v_outcome := 'awaiting_payment';
    ELSE
      v_outcome := 'no_change';
    END IF;
  ELSIF p_event_type = 'checkout.session.async_payment_failed' THEN
    IF v_state = 'awaiting_payment' THEN
      UPDATE painting_locks l SET holder = NULL, held_until = NULL WHERE l.holder = v_res;
      UPDATE reservations r SET state = 'released', released_reason = 'payment_failed',
                                updated_at = now()
       WHERE r.id = v_res;
      INSERT INTO audit_log (actor, action, reservation_id, session_id, reason)
      VALUES (p_actor, 'release', v_res, p_session, 'delayed payment failed');
      v_outcome := 'released';
    ELSE
      v_outcome := 'no_change';
    END IF;
  ELSIF p_event_type = 'checkout.session.expired'
        OR (p_event_type = 'session.retrieved' AND p_status = 'expired') THEN
    IF v_state = 'held' THEN
      UPDATE painting_locks l SET holder = NULL, held_until = NULL WHERE l.holder = v_res;
      UPDATE reservations r SET state = 'released', released_reason = 'session_expired',
                                updated_at = now()
       WHERE r.id = v_res;
      INSERT INTO audit_log (actor, action, reservation_id, session_id, reason)
      VALUES (p_actor, 'release', v_res, p_session, 'Stripe session expired');
      v_outcome := 'released';
    ELSE
      v_outcome := 'no_change';
    END IF;
  ELSE
    v_outcome := 'no_change';
  END IF;

  IF p_event_id IS NOT NULL THEN
    UPDATE stripe_events SET outcome = v_outcome, reservation_id = v_res, applied_at = now()
     WHERE id = p_event_id;
  END IF;
  RETURN QUERY SELECT v_outcome, v_res,
                      CASE WHEN v_outcome = 'refund_needed'
                           THEN (SELECT r.payment_intent FROM reservations r WHERE r.id = v_res) END;
END;
$$;

-- Records a refund Stripe confirmed for a reservation in refund_pending.
-- Idempotent: a second call for the same reservation records nothing.
CREATE FUNCTION paintlock_record_refund(p_reservation uuid, p_refund_id text, p_actor text)
RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE reservations r SET state = 'refunded', updated_at = now()
   WHERE r.id = p_reservation AND r.state = 'refund_pending';
  IF NOT FOUND THEN RETURN false; END IF;
  INSERT INTO audit_log (actor, action, reservation_id, session_id, reason, details)
  SELECT p_actor, 'refund', r.id, r.stripe_session_id,
         'paid after the hold lapsed while another buyer had a painting',
         jsonb_build_object('refund_id', p_refund_id, 'payment_intent', r.payment_intent,
                            'amount_minor', r.amount_minor, 'currency', r.currency)
    FROM reservations r WHERE r.id = p_reservation;
  RETURN true;
END;
$$;

-- Records a take-over decision that moved nothing (Stripe unreachable).
CREATE FUNCTION paintlock_audit(p_actor text, p_action text, p_reservation uuid,
                                p_painting text, p_session text, p_reason text, p_details jsonb)
RETURNS void
LANGUAGE sql AS $$
  INSERT INTO audit_log (actor, action, reservation_id, painting_id, session_id, reason, details)
  VALUES (p_actor, p_action, p_reservation, p_painting, p_session, p_reason,
          coalesce(p_details, '{}'::jsonb));
$$;
