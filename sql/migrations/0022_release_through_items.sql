-- A released reservation's lock rows are found through its items, not by
-- scanning every lock for its id.
--
-- painting_locks has no index on holder, so "UPDATE painting_locks … WHERE
-- l.holder = v_res" (paintlock_release: a buyer's cancel or a failed Stripe
-- call; paintlock_apply_session: an expired session or a failed delayed
-- payment) read every painting's lock row: 2–3.5 ms at 30,000 paintings,
-- several times a whole reserve. An index on holder is not the cure: every
-- grant and release changes holder, so no lock update could stay HOT —
-- pgbench on reserve.sql (30,000 paintings, 32 clients, publishing off,
-- alternating) ran 1,008–1,178 tps with one against 2,394–2,909 without.
-- A reservation holds only paintings it has items for (reserve and regrant
-- grant through them), so its items lead to every lock row it holds, by
-- primary key. The admin release (0003) already went this way. 2,000
-- releases at 30,000 paintings: 2,957–2,960 ms before, 403–410 ms after.
--
-- paintlock_unhold runs like the reserve (0020) and the credit functions
-- (0021): planned once per connection, and never onto a sequential scan
-- planned while reservation_items was nearly empty. The two callers are
-- restated with only those statements changed.

-- Clears every lock row p_reservation holds. The caller holds the lock rows
-- (paintlock_lock_reservation).
CREATE FUNCTION paintlock_unhold(p_reservation uuid) RETURNS void
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
BEGIN
  UPDATE painting_locks l SET holder = NULL, held_until = NULL
    FROM reservation_items i
   WHERE i.reservation_id = p_reservation AND l.painting_id = i.painting_id
     AND l.holder = p_reservation;
END;
$$;

CREATE OR REPLACE FUNCTION paintlock_release(p_reservation uuid, p_reason text, p_actor text)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  v_state text;
BEGIN
  PERFORM paintlock_lock_reservation(p_reservation);
  SELECT r.state INTO v_state FROM reservations r WHERE r.id = p_reservation FOR UPDATE;
  IF NOT FOUND THEN RETURN NULL; END IF;
  IF v_state <> 'held' THEN RETURN v_state; END IF;
  PERFORM paintlock_unhold(p_reservation);
  UPDATE reservations r SET state = 'released', released_reason = p_reason, updated_at = now()
   WHERE r.id = p_reservation;
  INSERT INTO audit_log (actor, action, reservation_id, session_id, reason)
  SELECT p_actor, 'release', p_reservation, r.stripe_session_id, p_reason
    FROM reservations r WHERE r.id = p_reservation;
  RETURN 'released';
END;
$$;

CREATE OR REPLACE FUNCTION paintlock_apply_session(
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
      PERFORM paintlock_unhold(v_res);
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
      PERFORM paintlock_unhold(v_res);
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
