-- paintlockctl's decisions (issue 4): admin release, sold / unsold marks and
-- the sweep, each one statement that locks before it decides, as every other
-- path does.
--
-- What must hold:
--   * Every function here locks painting_locks rows in sorted painting id
--     order before it locks or changes a reservation, like paintlock_reserve
--     and paintlock_apply_session, so an admin action never deadlocks with a
--     checkout or a webhook, and decides on rows nobody can change under it.
--   * An admin release frees a painting only while the reservation still
--     holds it with the fence the admin saw: a webhook that sold, or a
--     buyer who took over, in between wins, and the release says so.
--   * The sweep deletes only finished stories: released or refunded
--     reservations (and lapsed holds without a session) whose Stripe session,
--     if any, is known to be over. A row whose Stripe outcome the database
--     does not know is left for `paintlockctl reconcile`; sold, live and
--     refund_pending rows are never touched. Nothing depends on it running.

-- Timestamps as paintlockctl prints them: RFC 3339 in UTC with milliseconds,
-- so lines of a story sort by their text.
CREATE FUNCTION paintlock_admin_time(t timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
$$;

-- For the holds list, the sweep and the events list.
CREATE INDEX reservations_unsettled ON reservations (created_at)
  WHERE state IN ('held', 'awaiting_payment', 'refund_pending');
CREATE INDEX reservations_finished ON reservations (updated_at)
  WHERE state IN ('released', 'refunded');
CREATE INDEX stripe_events_received ON stripe_events (received_at);
CREATE INDEX audit_log_session ON audit_log (session_id);

-- What a hold is waiting for, for the holds list; NULL when the reservation is
-- not a hold any more (released, refunded, or sold with its catalogue flags).
-- The first five are stuck: a person or `paintlockctl reconcile` must act.
--   refund_pending       a late payment must be refunded; Stripe did not confirm yet
--   sold_unflagged       sold, but a painting lacks its catalogue flag: once
--                        the 24 h lock lapses it could be sold again
--   take_over_refused    lapsed; a buyer's take-over found Stripe unreachable
--   lapsed_session_open  lapsed; the database has not heard that its Stripe
--                        session ended, so it may still be open, or paid
--   awaiting_payment     a delayed payment method is settling
--   live                 held, the hold still running
--   lapsed               lapsed; its session (if any) is known to be over
CREATE FUNCTION paintlock_hold_condition(p_reservation uuid) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT CASE
           WHEN r.state = 'refund_pending' THEN 'refund_pending'
           WHEN r.state = 'sold' THEN
             CASE WHEN EXISTS (SELECT 1 FROM reservation_items i JOIN paintings p ON p.id = i.painting_id
                                WHERE i.reservation_id = r.id AND p.sold_at IS NULL)
                  THEN 'sold_unflagged' END
           WHEN r.state = 'awaiting_payment' THEN 'awaiting_payment'
           WHEN r.state <> 'held' THEN NULL
           WHEN r.held_until > now() THEN 'live'
           WHEN EXISTS (SELECT 1 FROM audit_log a
                         WHERE a.reservation_id = r.id AND a.action = 'take_over_refused')
                AND r.stripe_session_id IS NOT NULL AND coalesce(r.stripe_status, 'open') = 'open'
             THEN 'take_over_refused'
           WHEN r.stripe_session_id IS NOT NULL AND coalesce(r.stripe_status, 'open') = 'open'
             THEN 'lapsed_session_open'
           ELSE 'lapsed'
         END
    FROM reservations r WHERE r.id = p_reservation;
$$;

-- Sort key of a hold condition: the most urgent first.
CREATE FUNCTION paintlock_hold_rank(p_condition text) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE p_condition
           WHEN 'refund_pending' THEN 1
           WHEN 'sold_unflagged' THEN 2
           WHEN 'take_over_refused' THEN 3
           WHEN 'lapsed_session_open' THEN 4
           WHEN 'awaiting_payment' THEN 5
           WHEN 'live' THEN 6
           ELSE 7
         END;
$$;

-- Releases a reservation for an admin, if it is still exactly what the admin
-- decided on: in state p_expect_state with the item fences p_expect_fences
-- (in painting id order). Only 'held' is released, or 'awaiting_payment' when
-- p_forced (a payment that settles later is then accepted if the paintings are
-- still free, or refunded: paintlock_apply_session's late payment).
--
-- p_stripe_status: what Stripe said of the session (recorded), or NULL.
-- Returns one row (outcome, state_now):
--   released   done, audited (action 'release', details.forced); also when
--              the webhook of the expiry the admin asked for released it first
--   changed    the state or the fences moved since the admin looked: nothing done
--   refused    not a state an admin release undoes: nothing done
--   not_found  no such reservation
CREATE FUNCTION paintlock_admin_release(
    p_reservation uuid, p_expect_state text, p_expect_fences bigint[], p_reason text,
    p_actor text, p_forced boolean, p_stripe_status text)
RETURNS TABLE (outcome text, state_now text)
LANGUAGE plpgsql AS $$
DECLARE
  v_state text;
  v_reason text;
  v_session text;
  v_fences bigint[];
  v_paintings text[];
BEGIN
  PERFORM paintlock_lock_reservation(p_reservation);
  SELECT r.state, r.released_reason, r.stripe_session_id INTO v_state, v_reason, v_session
    FROM reservations r WHERE r.id = p_reservation FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::text, NULL::text;
    RETURN;
  END IF;
  SELECT array_agg(i.fence ORDER BY i.painting_id), array_agg(i.painting_id ORDER BY i.painting_id)
    INTO v_fences, v_paintings
    FROM reservation_items i WHERE i.reservation_id = p_reservation;
  IF v_state IS DISTINCT FROM p_expect_state OR v_fences IS DISTINCT FROM p_expect_fences THEN
    -- The expiry the admin just asked Stripe for fires checkout.session.expired,
    -- and its webhook often releases the reservation first. That release is
    -- the admin's: record it as such, with the admin's reason.
    IF p_expect_state = 'held' AND v_state = 'released' AND v_reason = 'session_expired'
       AND p_stripe_status = 'expired' AND NOT p_forced
       AND v_fences IS NOT DISTINCT FROM p_expect_fences THEN
      UPDATE reservations r SET released_reason = 'admin', updated_at = now()
       WHERE r.id = p_reservation;
      INSERT INTO audit_log (actor, action, reservation_id, session_id, reason, details)
      VALUES (p_actor, 'release', p_reservation, v_session, p_reason,
              jsonb_build_object('forced', false, 'previous_state', 'held',
                                 'paintings', to_jsonb(v_paintings), 'stripe_status', 'expired',
                                 'released_by', 'the expiry webhook, applied first'));
      RETURN QUERY SELECT 'released'::text, 'released'::text;
      RETURN;
    END IF;
    RETURN QUERY SELECT 'changed'::text, v_state;
    RETURN;
  END IF;
  IF NOT (v_state = 'held' OR (v_state = 'awaiting_payment' AND p_forced)) THEN
    RETURN QUERY SELECT 'refused'::text, v_state;
    RETURN;
  END IF;

  -- Only locks it still holds with its own fence: a lock granted since then
  -- belongs to somebody else.
  UPDATE painting_locks l SET holder = NULL, held_until = NULL
    FROM reservation_items i
   WHERE i.reservation_id = p_reservation AND l.painting_id = i.painting_id
     AND l.holder = p_reservation AND l.fence = i.fence;
  UPDATE reservations r
     SET state = 'released',
         released_reason = CASE WHEN p_forced THEN 'admin_forced' ELSE 'admin' END,
         stripe_status = coalesce(p_stripe_status, r.stripe_status),
         updated_at = now()
   WHERE r.id = p_reservation;
  INSERT INTO audit_log (actor, action, reservation_id, session_id, reason, details)
  VALUES (p_actor, 'release', p_reservation, v_session, p_reason,
          jsonb_strip_nulls(jsonb_build_object('forced', p_forced, 'previous_state', v_state,
                                               'paintings', to_jsonb(v_paintings),
                                               'stripe_status', p_stripe_status)));
  RETURN QUERY SELECT 'released'::text, 'released'::text;
END;
$$;

-- Marks a painting sold in the catalogue (sold elsewhere, or a sale whose
-- catalogue flag is missing). Refused while a reservation holds it, or may
-- still be paid for it: what paintlock_reserve would refuse or take over.
-- A lapsed holder whose session is over loses all of its paintings, as at a
-- take-over, so a payment that still arrives for it is refunded, never sold.
--
-- Returns one row (outcome, holder, holder_state, until):
--   sold          done, audited (action 'mark_sold')
--   already_sold  the catalogue flag was set already: nothing done
--   held          holder (holder_state) holds it until `until`, or its
--                 session may still be paid (until NULL): nothing done
--   unknown       no such painting
CREATE FUNCTION paintlock_admin_mark_sold(p_painting text, p_reason text, p_actor text)
RETURNS TABLE (outcome text, holder uuid, holder_state text, until timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
  v_sold_at timestamptz;
  v_holder uuid;
  v_holder_state text;
  v_until timestamptz;
  v_sale uuid;
  v_lapsed uuid;
BEGIN
  PERFORM 1 FROM painting_locks l WHERE l.painting_id = p_painting FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'unknown'::text, NULL::uuid, NULL::text, NULL::timestamptz;
    RETURN;
  END IF;
  SELECT p.sold_at INTO v_sold_at FROM paintings p WHERE p.id = p_painting;
  IF v_sold_at IS NOT NULL THEN
    RETURN QUERY SELECT 'already_sold'::text, NULL::uuid, NULL::text, NULL::timestamptz;
    RETURN;
  END IF;

  SELECT r.id, r.state, CASE WHEN l.held_until > now() THEN l.held_until END
    INTO v_holder, v_holder_state, v_until
    FROM painting_locks l JOIN reservations r ON r.id = l.holder
   WHERE l.painting_id = p_painting
     AND r.state IN ('held', 'awaiting_payment')
     AND (l.held_until > now()
          OR (r.state = 'held' AND r.stripe_session_id IS NOT NULL
              AND coalesce(r.stripe_status, 'open') = 'open'
              AND coalesce(r.stripe_expires_at > now(), true)));
  IF FOUND THEN
    RETURN QUERY SELECT 'held'::text, v_holder, v_holder_state, v_until;
    RETURN;
  END IF;

  UPDATE reservations r SET state = 'released', released_reason = 'lapsed', updated_at = now()
    FROM painting_locks l
   WHERE l.painting_id = p_painting AND r.id = l.holder AND r.state IN ('held', 'awaiting_payment')
  RETURNING r.id INTO v_lapsed;
  IF v_lapsed IS NOT NULL THEN
    UPDATE painting_locks l SET holder = NULL, held_until = NULL
     WHERE l.painting_id = p_painting AND l.holder = v_lapsed;
  END IF;
  SELECT r.id INTO v_sale
    FROM reservation_items i JOIN reservations r ON r.id = i.reservation_id
   WHERE i.painting_id = p_painting AND r.state = 'sold'
   ORDER BY r.sold_at DESC LIMIT 1;

  UPDATE paintings p SET sold_at = now(), updated_at = now() WHERE p.id = p_painting;
  INSERT INTO audit_log (actor, action, reservation_id, painting_id, reason, details)
  VALUES (p_actor, 'mark_sold', v_sale, p_painting, p_reason,
          jsonb_strip_nulls(jsonb_build_object('sale', v_sale, 'released_lapsed_hold', v_lapsed)));
  RETURN QUERY SELECT 'sold'::text, NULL::uuid, NULL::text, NULL::timestamptz;
END;
$$;

-- Takes a painting off sale's "sold" after the seller refunded the buyer
-- outside paintlock: clears paintings.sold_at and painting_locks.sold_until.
-- The paintlock sale that bought it, if any, becomes 'refunded' (audited as a
-- refund made outside paintlock); other paintings of that sale stay sold.
--
-- Returns one row (outcome, sale):
--   unsold    done, audited (action 'mark_unsold', and 'refund' for the sale)
--   not_sold  neither flag was set: nothing done
--   unknown   no such painting
CREATE FUNCTION paintlock_admin_mark_unsold(p_painting text, p_reason text, p_actor text)
RETURNS TABLE (outcome text, sale uuid)
LANGUAGE plpgsql AS $$
DECLARE
  v_sale uuid;
  v_check uuid;
  v_session text;
  v_sold boolean;
  v_others text[];
BEGIN
  -- The sale's other paintings are locked too, all in one sorted pass: the
  -- sale's state is guarded by every one of its lock rows.
  SELECT r.id INTO v_sale
    FROM reservation_items i JOIN reservations r ON r.id = i.reservation_id
   WHERE i.painting_id = p_painting AND r.state = 'sold'
   ORDER BY r.sold_at DESC, r.id LIMIT 1;
  PERFORM 1 FROM painting_locks l
   WHERE l.painting_id = p_painting
      OR l.painting_id IN (SELECT i.painting_id FROM reservation_items i WHERE i.reservation_id = v_sale)
   ORDER BY l.painting_id FOR UPDATE;
  IF NOT EXISTS (SELECT 1 FROM painting_locks l WHERE l.painting_id = p_painting) THEN
    RETURN QUERY SELECT 'unknown'::text, NULL::uuid;
    RETURN;
  END IF;
  SELECT r.id INTO v_check
    FROM reservation_items i JOIN reservations r ON r.id = i.reservation_id
   WHERE i.painting_id = p_painting AND r.state = 'sold'
   ORDER BY r.sold_at DESC, r.id LIMIT 1;
  IF v_check IS DISTINCT FROM v_sale THEN
    -- A sale committed while we locked: its other rows are not ours. Run again.
    RAISE EXCEPTION 'the sale of % changed while locking', p_painting
      USING ERRCODE = 'serialization_failure';
  END IF;
  SELECT p.sold_at IS NOT NULL OR coalesce(l.sold_until > now(), false) INTO v_sold
    FROM paintings p JOIN painting_locks l ON l.painting_id = p.id WHERE p.id = p_painting;
  IF NOT v_sold THEN
    RETURN QUERY SELECT 'not_sold'::text, NULL::uuid;
    RETURN;
  END IF;

  IF v_sale IS NOT NULL THEN
    SELECT r.stripe_session_id INTO v_session FROM reservations r WHERE r.id = v_sale FOR UPDATE;
  END IF;
  UPDATE paintings p SET sold_at = NULL, updated_at = now() WHERE p.id = p_painting;
  -- A live holder cannot coexist with a sale; anything else named here is history.
  UPDATE painting_locks l
     SET sold_until = NULL,
         holder = CASE WHEN o.live THEN l.holder END,
         held_until = CASE WHEN o.live THEN l.held_until END
    FROM (SELECT coalesce(bool_or(r.state IN ('held', 'awaiting_payment')), false) AS live
            FROM painting_locks k JOIN reservations r ON r.id = k.holder
           WHERE k.painting_id = p_painting) o
   WHERE l.painting_id = p_painting;
  IF v_sale IS NOT NULL THEN
    SELECT array_agg(i.painting_id ORDER BY i.painting_id) INTO v_others
      FROM reservation_items i WHERE i.reservation_id = v_sale AND i.painting_id <> p_painting;
    UPDATE reservations r SET state = 'refunded', updated_at = now() WHERE r.id = v_sale;
    INSERT INTO audit_log (actor, action, reservation_id, painting_id, session_id, reason, details)
    VALUES (p_actor, 'refund', v_sale, p_painting, v_session, 'refunded outside paintlock: ' || p_reason,
            jsonb_build_object('outside_paintlock', true,
                               'still_sold', coalesce(to_jsonb(v_others), '[]'::jsonb)));
  END IF;
  INSERT INTO audit_log (actor, action, reservation_id, painting_id, session_id, reason, details)
  VALUES (p_actor, 'mark_unsold', v_sale, p_painting, v_session, p_reason,
          jsonb_strip_nulls(jsonb_build_object('sale', v_sale)));
  RETURN QUERY SELECT 'unsold'::text, v_sale;
END;
$$;

-- True when nothing can happen to reservation r any more and it last changed
-- before now() - p_older_than: the sweep may delete it.
CREATE FUNCTION paintlock_sweepable(r reservations, p_older_than interval) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT coalesce(
           r.updated_at < now() - p_older_than
           AND (r.state IN ('released', 'refunded')
                OR (r.state = 'held' AND r.held_until < now() - p_older_than))
           -- Its Stripe session, if any, is known to be over. A session the
           -- database last knew as open may have been paid: reconcile first.
           AND (r.stripe_session_id IS NULL
                OR r.stripe_status = 'expired'
                OR r.state = 'refunded'
                OR r.released_reason = 'payment_failed'),
           false);
$$;

-- Deletes up to p_batch sweepable reservations (their items go with them) and
-- clears lock holders that name a released or refunded reservation. Call
-- until reservations_deleted is 0. Returns the counts of this call.
CREATE FUNCTION paintlock_admin_sweep(p_older_than interval, p_batch integer)
RETURNS TABLE (reservations_deleted bigint, released_deleted bigint, refunded_deleted bigint,
               lapsed_deleted bigint, items_deleted bigint, holders_cleared bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_candidates uuid[];
  v_ids uuid[];
  v_cleared bigint;
  v_items bigint := 0;
BEGIN
  SELECT coalesce(array_agg(c.id), '{}') INTO v_candidates FROM (
    SELECT r.id FROM reservations r
     WHERE r.state IN ('released', 'refunded', 'held') AND paintlock_sweepable(r, p_older_than)
     ORDER BY r.id LIMIT p_batch) c;

  -- Every lock row this call may change, in one sorted pass (the global
  -- order); then the candidates, deciding again in a new statement, on rows
  -- no one else can change any more.
  PERFORM 1 FROM painting_locks l LEFT JOIN reservations r ON r.id = l.holder
   WHERE r.state IN ('released', 'refunded') OR l.holder = ANY (v_candidates)
   ORDER BY l.painting_id FOR UPDATE OF l;
  WITH cleared AS (
    UPDATE painting_locks l SET holder = NULL, held_until = NULL
      FROM reservations r
     WHERE r.id = l.holder AND r.state IN ('released', 'refunded')
    RETURNING 1)
  SELECT count(*) INTO v_cleared FROM cleared;

  PERFORM 1 FROM reservations r WHERE r.id = ANY (v_candidates) ORDER BY r.id FOR UPDATE;
  SELECT coalesce(array_agg(r.id), '{}') INTO v_ids FROM reservations r
   WHERE r.id = ANY (v_candidates) AND paintlock_sweepable(r, p_older_than);
  SELECT count(*) INTO v_items FROM reservation_items i WHERE i.reservation_id = ANY (v_ids);
  RETURN QUERY
    WITH gone AS (
      DELETE FROM reservations r WHERE r.id = ANY (v_ids) RETURNING r.state)
    SELECT count(*), count(*) FILTER (WHERE g.state = 'released'),
           count(*) FILTER (WHERE g.state = 'refunded'), count(*) FILTER (WHERE g.state = 'held'),
           v_items, v_cleared
      FROM gone g;
END;
$$;
