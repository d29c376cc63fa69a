-- Refunds and disputes made at Stripe (charge.refunded, charge.dispute.created,
-- charge.dispute.closed), mapped to paintlock's sales by the payment intent a
-- completed Checkout Session carries (reservations.payment_intent, recorded
-- by paintlock_apply_session).
--
-- What must hold:
--   * A refund or dispute is matched to the ONE sale whose payment it is, by
--     payment intent, never by painting: a refund paintlock issued for a late
--     payment (that buyer's reservation is refund_pending or refunded) never
--     touches the painting another buyer bought.
--   * A full refund of a sale puts its paintings back on sale exactly as
--     `paintlockctl unsold` does (paintlock_admin_mark_unsold, the same
--     function, under the same sorted lock rows), audited; a partial refund
--     is audited only; a full refund of a late payment paintlock owes a
--     refund for confirms that refund (paintlock_record_refund).
--   * Any order: what Stripe says of a charge is kept by charge and dispute
--     id whether or not a sale is known for its payment intent yet. A sale
--     applied later (paintlock_settle_refunds, called after every session
--     apply) takes the refund into account at once; disputes are joined to
--     sales by payment intent when read. Refund amounts only grow; a closed
--     dispute stays closed; among events of the same kind the newest (by the
--     event's own `created`) wins.
--   * Once per event: every charge event is recorded in stripe_events, and a
--     second delivery of it changes nothing.

CREATE INDEX reservations_payment_intent ON reservations (payment_intent)
  WHERE payment_intent IS NOT NULL;

-- What Stripe last said of each charge's refunds.
CREATE TABLE charge_refunds (
  charge_id      text PRIMARY KEY,  -- ch_…
  payment_intent text NOT NULL,
  amount_minor   bigint NOT NULL,   -- the charge's amount
  refunded_minor bigint NOT NULL,   -- refunded so far (Stripe's amount_refunded)
  currency       text NOT NULL,
  fully_refunded boolean NOT NULL,
  received_at    timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX charge_refunds_payment_intent ON charge_refunds (payment_intent);

-- Disputes (chargebacks) of charges, as Stripe last described them.
CREATE TABLE disputes (
  id              text PRIMARY KEY,  -- dp_…
  payment_intent  text NOT NULL,
  charge_id       text,
  amount_minor    bigint NOT NULL,
  currency        text NOT NULL,
  reason          text NOT NULL,     -- fraudulent, product_not_received, …
  status          text NOT NULL,     -- needs_response, under_review, won, lost, …
  closed          boolean NOT NULL,  -- a charge.dispute.closed was applied
  status_created  bigint NOT NULL,   -- `created` (unix s) of the event the status came from
  opened_at       timestamptz NOT NULL DEFAULT now(),
  closed_at       timestamptz,
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX disputes_payment_intent ON disputes (payment_intent);

-- What the full or partial refunds known for p_reservation's payment do to
-- it, applied now: a full refund un-sells a sale (paintlock_admin_mark_unsold
-- for each of its paintings) or confirms a refund paintlock owes. Audited as
-- 'stripe_refund' when it changed something, or always with p_audit_always
-- (a charge.refunded event naming this sale). The caller holds nothing; this
-- locks the reservation's lock rows (sorted) before it reads the state.
--
-- Returns the effect: none (no refund known), partial, unsold,
-- refund_confirmed, already_refunded, before_sale (the payment is not a sale
-- yet: applied when it becomes one).
CREATE FUNCTION paintlock_settle_refunds(p_reservation uuid, p_actor text, p_event_id text,
                                         p_audit_always boolean)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  v_state text;
  v_pi text;
  v_session text;
  v_charge charge_refunds%ROWTYPE;
  v_painting text;
  v_paintings text[];
  v_effect text;
BEGIN
  PERFORM paintlock_lock_reservation(p_reservation);
  SELECT r.state, r.payment_intent, r.stripe_session_id INTO v_state, v_pi, v_session
    FROM reservations r WHERE r.id = p_reservation FOR UPDATE;
  SELECT * INTO v_charge FROM charge_refunds c
   WHERE c.payment_intent = v_pi
   ORDER BY c.fully_refunded DESC, c.refunded_minor DESC, c.charge_id LIMIT 1;
  IF v_pi IS NULL OR v_charge.charge_id IS NULL THEN
    RETURN 'none';
  END IF;
  SELECT array_agg(i.painting_id ORDER BY i.painting_id) INTO v_paintings
    FROM reservation_items i WHERE i.reservation_id = p_reservation;

  IF NOT v_charge.fully_refunded THEN
    v_effect := 'partial';
  ELSIF v_state = 'sold' THEN
    -- The sale is the one that sold these paintings (invariant 1), so this is
    -- exactly `paintlockctl unsold` for each: the first call records the sale
    -- as refunded, every call clears a painting's sold flags.
    FOREACH v_painting IN ARRAY coalesce(v_paintings, '{}') LOOP
      PERFORM 1 FROM paintlock_admin_mark_unsold(
        v_painting, 'refunded in full at Stripe (charge ' || v_charge.charge_id || ')', p_actor);
    END LOOP;
    v_effect := 'unsold';
  ELSIF v_state = 'refund_pending' THEN
    PERFORM paintlock_record_refund(p_reservation, v_charge.charge_id, p_actor);
    v_effect := 'refund_confirmed';
  ELSIF v_state = 'refunded' THEN
    v_effect := 'already_refunded';
  ELSE
    v_effect := 'before_sale';
  END IF;

  IF p_audit_always OR v_effect IN ('unsold', 'refund_confirmed') THEN
    INSERT INTO audit_log (actor, action, reservation_id, session_id, reason, details)
    VALUES (p_actor, 'stripe_refund', p_reservation, v_session,
            CASE v_effect
              WHEN 'partial' THEN 'partly refunded at Stripe; the paintings stay sold'
              WHEN 'unsold' THEN 'refunded in full at Stripe; the paintings are for sale again'
              WHEN 'refund_confirmed' THEN 'Stripe confirmed the refund of a late payment'
              WHEN 'already_refunded' THEN 'refunded at Stripe; the payment was already refunded'
              ELSE 'refunded at Stripe before the sale was applied' END,
            jsonb_build_object('effect', v_effect, 'charge', v_charge.charge_id,
                               'payment_intent', v_pi, 'amount_minor', v_charge.amount_minor,
                               'refunded_minor', v_charge.refunded_minor,
                               'currency', v_charge.currency, 'paintings', to_jsonb(v_paintings),
                               'event_id', p_event_id));
  END IF;
  RETURN v_effect;
END;
$$;

-- After a session apply (sql/queries/apply_session.sql and
-- apply_offline_session.sql call it on the apply's row, in the same
-- statement): a payment that just became a sale, or a refund paintlock owes,
-- whose charge Stripe already reported refunded in full, is settled now —
-- un-sold, or the owed refund confirmed — and answered 'already_refunded', so
-- nobody is told "sold" and no second refund is asked of Stripe. Otherwise
-- the apply's row as it is. Costs one index probe when no refund is known.
CREATE FUNCTION paintlock_after_session_apply(p_outcome text, p_reservation uuid,
                                              p_payment_intent text, p_actor text,
                                              p_event_id text)
RETURNS TABLE (outcome text, reservation_id uuid, payment_intent text)
LANGUAGE plpgsql AS $$
DECLARE
  v_effect text;
BEGIN
  IF p_reservation IS NOT NULL AND p_outcome IN ('sold', 'sold_late', 'refund_needed')
     AND EXISTS (SELECT 1 FROM reservations r
                   JOIN charge_refunds c ON c.payment_intent = r.payment_intent
                  WHERE r.id = p_reservation) THEN
    v_effect := paintlock_settle_refunds(p_reservation, p_actor, p_event_id, false);
    IF v_effect IN ('unsold', 'refund_confirmed') THEN
      UPDATE stripe_events e SET outcome = 'already_refunded' WHERE e.id = p_event_id;
      RETURN QUERY SELECT 'already_refunded'::text, p_reservation, NULL::text;
      RETURN;
    END IF;
  END IF;
  RETURN QUERY SELECT p_outcome, p_reservation, p_payment_intent;
END;
$$;

-- The start of every charge event: records its dedup row in stripe_events
-- with the sale of its payment intent (the oldest reservation that names it;
-- a session has one payment intent, so there is at most one). is_new false:
-- the event was recorded before, and reservation_id / session_id are what
-- was recorded then.
CREATE FUNCTION paintlock_charge_event_start(p_event_id text, p_event_type text,
                                             p_payment_intent text,
                                             OUT is_new boolean, OUT reservation_id uuid,
                                             OUT session_id text)
LANGUAGE plpgsql AS $$
BEGIN
  SELECT r.id, r.stripe_session_id INTO reservation_id, session_id
    FROM reservations r WHERE r.payment_intent = p_payment_intent
   ORDER BY r.created_at, r.id LIMIT 1;
  INSERT INTO stripe_events AS e (id, type, reservation_id, session_id, outcome)
  VALUES (p_event_id, p_event_type, paintlock_charge_event_start.reservation_id,
          paintlock_charge_event_start.session_id, 'applying')
  ON CONFLICT (id) DO NOTHING;
  is_new := FOUND;
  IF NOT is_new THEN
    SELECT e.reservation_id, e.session_id INTO reservation_id, session_id
      FROM stripe_events e WHERE e.id = p_event_id;
  END IF;
END;
$$;

-- Applies a charge.refunded event once: keeps what it says of the charge
-- (amounts only grow), then settles the sale of its payment intent, if one is
-- known. Returns one row (outcome, reservation_id, session_id):
--   duplicate               the event was applied before: nothing done
--   unknown_payment_intent  no sale is known for the payment (yet): the facts
--                           are kept for a session completed later
--   partial, unsold, refund_confirmed, already_refunded, before_sale
--                           as paintlock_settle_refunds, audited
CREATE FUNCTION paintlock_apply_charge_refund(
    p_event_id text, p_event_type text, p_charge text, p_payment_intent text,
    p_amount bigint, p_refunded bigint, p_currency text, p_fully_refunded boolean,
    p_actor text)
RETURNS TABLE (outcome text, reservation_id uuid, session_id text)
LANGUAGE plpgsql AS $$
DECLARE
  v_new boolean;
  v_res uuid;
  v_session text;
  v_outcome text;
BEGIN
  SELECT s.is_new, s.reservation_id, s.session_id INTO v_new, v_res, v_session
    FROM paintlock_charge_event_start(p_event_id, p_event_type, p_payment_intent) s;
  IF NOT v_new THEN
    RETURN QUERY SELECT 'duplicate'::text, v_res, v_session;
    RETURN;
  END IF;

  INSERT INTO charge_refunds AS c (charge_id, payment_intent, amount_minor, refunded_minor,
                                   currency, fully_refunded)
  VALUES (p_charge, p_payment_intent, p_amount, p_refunded, p_currency,
          p_fully_refunded OR p_refunded >= p_amount)
  ON CONFLICT (charge_id) DO UPDATE
     SET refunded_minor = greatest(c.refunded_minor, excluded.refunded_minor),
         fully_refunded = c.fully_refunded OR excluded.fully_refunded,
         updated_at = now();

  IF v_res IS NULL THEN
    v_outcome := 'unknown_payment_intent';
  ELSE
    v_outcome := paintlock_settle_refunds(v_res, p_actor, p_event_id, true);
  END IF;
  UPDATE stripe_events e SET outcome = v_outcome, applied_at = now() WHERE e.id = p_event_id;
  RETURN QUERY SELECT v_outcome, v_res, v_session;
END;
$$;

-- Applies a charge.dispute.created or .closed event once: keeps the dispute
-- (a closed one stays closed; otherwise the newest event's status wins) and
-- audits it against the sale of its payment intent, if one is known.
-- Returns one row (outcome, reservation_id, session_id): duplicate,
-- unknown_payment_intent (kept, shown once a sale names the payment),
-- dispute_opened, dispute_closed, stale (an older status than the one kept).
CREATE FUNCTION paintlock_apply_dispute(
    p_event_id text, p_event_type text, p_event_created bigint, p_dispute text, p_charge text,
    p_payment_intent text, p_amount bigint, p_currency text, p_reason text, p_status text,
    p_actor text)
RETURNS TABLE (outcome text, reservation_id uuid, session_id text)
LANGUAGE plpgsql AS $$
DECLARE
  v_closed boolean := p_event_type = 'charge.dispute.closed';
  v_new boolean;
  v_res uuid;
  v_session text;
  v_outcome text;
BEGIN
  SELECT s.is_new, s.reservation_id, s.session_id INTO v_new, v_res, v_session
    FROM paintlock_charge_event_start(p_event_id, p_event_type, p_payment_intent) s;
  IF NOT v_new THEN
    RETURN QUERY SELECT 'duplicate'::text, v_res, v_session;
    RETURN;
  END IF;

  INSERT INTO disputes AS d (id, payment_intent, charge_id, amount_minor, currency, reason,
                             status, closed, status_created, closed_at)
  VALUES (p_dispute, p_payment_intent, p_charge, p_amount, p_currency, p_reason, p_status,
          v_closed, p_event_created, CASE WHEN v_closed THEN now() END)
  ON CONFLICT (id) DO UPDATE
     SET status = excluded.status, reason = excluded.reason, amount_minor = excluded.amount_minor,
         closed = excluded.closed, status_created = excluded.status_created,
         closed_at = coalesce(d.closed_at, excluded.closed_at), updated_at = now()
   WHERE (excluded.closed AND NOT d.closed)
      OR (excluded.closed = d.closed AND excluded.status_created >= d.status_created);

  IF v_res IS NULL THEN
    v_outcome := 'unknown_payment_intent';
  ELSE
    v_outcome := CASE WHEN NOT EXISTS (SELECT 1 FROM disputes d WHERE d.id = p_dispute
                                          AND d.status = p_status AND d.closed = v_closed)
                      THEN 'stale'
                      WHEN v_closed THEN 'dispute_closed' ELSE 'dispute_opened' END;
    INSERT INTO audit_log (actor, action, reservation_id, session_id, reason, details)
    VALUES (p_actor, CASE WHEN v_closed THEN 'dispute_closed' ELSE 'dispute_opened' END, v_res,
            v_session,
            CASE WHEN v_closed THEN 'the buyer''s dispute closed: ' || p_status
                 ELSE 'the buyer disputed the payment: ' || p_reason END,
            jsonb_build_object('dispute', p_dispute, 'charge', p_charge,
                               'payment_intent', p_payment_intent, 'status', p_status,
                               'reason', p_reason, 'amount_minor', p_amount,
                               'currency', p_currency, 'event_id', p_event_id,
                               'stale', v_outcome = 'stale'));
  END IF;
  UPDATE stripe_events e SET outcome = v_outcome, applied_at = now() WHERE e.id = p_event_id;
  RETURN QUERY SELECT v_outcome, v_res, v_session;
END;
$$;

-- The hold conditions' order (sql/migrations/0003), with `disputed` — a sale
-- whose payment the buyer disputed and the dispute is still open — among the
-- stuck ones (rank ≤ 6): the seller must answer it at Stripe before its
-- deadline.
CREATE OR REPLACE FUNCTION paintlock_hold_rank(p_condition text) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE p_condition
           WHEN 'refund_pending' THEN 1
           WHEN 'sold_unflagged' THEN 2
           WHEN 'disputed' THEN 3
           WHEN 'take_over_refused' THEN 4
           WHEN 'lapsed_session_open' THEN 5
           WHEN 'awaiting_payment' THEN 6
           WHEN 'live' THEN 7
           ELSE 8
         END;
$$;
