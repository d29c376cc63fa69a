-- A reserve finds the reservations whose lapsed holds it takes over by
-- primary key only (paintlock_reserve, five arguments, from 0009; the rest of
-- the function is unchanged).
--
-- 0009 selected and released them with
--   WHERE r.id IN (SELECT l.holder FROM painting_locks l WHERE …)
--     AND r.state IN ('held', 'awaiting_payment')
-- The state test matches the predicates of the partial indexes
-- reservations_live and reservations_unsettled. When the statistics say
-- almost no reservation is live (a long history of sold and released ones,
-- analysed before a launch) while thousands are (the launch), the planner
-- estimated one row there and scanned every live hold for each reserve, twice:
-- measured with 20,000 released reservations and pgbench on reserve.sql, 32
-- clients, 1,500 → 340–420 tps, each of those two statements 17–25 ms (with
-- this migration: 2,100 tps, and 1,700–2,000 with no history). Now the
-- holders come from the cart's lock rows (locked first), each reservation row
-- is read and locked by its id alone, and the state is tested on the row.
-- The function is restated whole: a migration cannot edit part of one.
-- paintlock_regrant (0002) and the admin functions (0003) keep the old form:
-- they run per late payment or operator command, not per reserve.

CREATE OR REPLACE FUNCTION paintlock_reserve(p_paintings text[], p_hold interval, p_buyer text,
                                             p_id uuid, p_line_token text)
RETURNS TABLE (outcome text, painting_id text, reservation_id uuid, until timestamptz,
               stripe_session_id text, line_position bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_id uuid;
  v_until timestamptz;
  v_line_busy boolean := false;
  v_claims bigint[] := '{}';
  v_painting text;
  v_holder uuid;
  v_state text;
BEGIN
  PERFORM 1 FROM painting_locks l WHERE l.painting_id = ANY (p_paintings)
   ORDER BY l.painting_id FOR UPDATE;

  RETURN QUERY
    SELECT 'unknown'::text, w.id, NULL::uuid, NULL::timestamptz, NULL::text, NULL::bigint
      FROM unnest(p_paintings) AS w (id)
     WHERE NOT EXISTS (SELECT 1 FROM painting_locks l WHERE l.painting_id = w.id);
  IF FOUND THEN RETURN; END IF;

  -- The one probe a cart without a line costs.
  IF EXISTS (SELECT 1 FROM line_entries e
              WHERE e.painting_id = ANY (p_paintings) AND e.state = 'waiting') THEN
    FOR v_painting IN
      SELECT DISTINCT e.painting_id FROM line_entries e
       WHERE e.painting_id = ANY (p_paintings) AND e.state = 'waiting'
       ORDER BY e.painting_id
    LOOP
      PERFORM paintlock_line_settle(v_painting);
      IF NOT (paintlock_painting_sold(v_painting) OR paintlock_painting_held(v_painting)) THEN
        -- The window running now, if any: its entry's token alone may reserve.
        RETURN QUERY
          SELECT 'busy'::text, v_painting, NULL::uuid, c.window_until, NULL::text, NULL::bigint
            FROM paintlock_line_chain(v_painting) c
           WHERE c.window_from <= now() AND now() < c.window_until
             AND c.token_sha256 IS DISTINCT FROM p_line_token;
        IF FOUND THEN
          v_line_busy := true;
        ELSE
          v_claims := v_claims || ARRAY(
            SELECT c.entry_id FROM paintlock_line_chain(v_painting) c
             WHERE c.window_from <= now() AND now() < c.window_until
               AND c.token_sha256 = p_line_token);
        END IF;
      END IF;
      -- Whatever stands in the way, the caller's place is owed.
      RETURN QUERY
        SELECT 'in_line'::text, v_painting, NULL::uuid, m.window_from, NULL::text,
               m.entry_position
          FROM paintlock_line_entry(v_painting, p_line_token) m
         WHERE p_line_token IS NOT NULL AND m.state = 'waiting';
    END LOOP;
  END IF;

  RETURN QUERY
    SELECT CASE
             WHEN p.sold_at IS NOT NULL OR l.sold_until > now() THEN 'sold'
             WHEN l.held_until > now() THEN 'busy'
             ELSE 'takeover'
           END,
           l.painting_id, l.holder,
           CASE WHEN p.sold_at IS NULL AND coalesce(l.sold_until <= now(), true) THEN l.held_until END,
           r.stripe_session_id, NULL::bigint
      FROM painting_locks l
      JOIN paintings p ON p.id = l.painting_id
      LEFT JOIN reservations r ON r.id = l.holder
     WHERE l.painting_id = ANY (p_paintings)
       AND (p.sold_at IS NOT NULL
            OR l.sold_until > now()
            OR (r.state IN ('held', 'awaiting_payment')
                AND (l.held_until > now()
                     -- lapsed, but the buyer may still be paying at Stripe
                     OR (r.state = 'held' AND r.stripe_session_id IS NOT NULL
                         AND coalesce(r.stripe_status, 'open') = 'open'
                         AND coalesce(r.stripe_expires_at > now(), true)))))
     ORDER BY l.painting_id;
  IF FOUND OR v_line_busy THEN RETURN; END IF;

  -- Reservations whose lapsed holds we are taking lose all of their paintings:
  -- a reservation holds all of its paintings or none. Each holder's row is
  -- found by its primary key alone, locked in id order, and its state tested
  -- on the locked row (see the head of this file for why not in WHERE).
  FOR v_holder IN
    SELECT DISTINCT l.holder FROM painting_locks l
     WHERE l.painting_id = ANY (p_paintings) AND l.holder IS NOT NULL
     ORDER BY l.holder
  LOOP
    SELECT r.state INTO v_state FROM reservations r WHERE r.id = v_holder FOR UPDATE;
    IF v_state IN ('held', 'awaiting_payment') THEN
      UPDATE reservations r
         SET state = 'released', released_reason = 'lapsed', updated_at = now()
       WHERE r.id = v_holder;
    END IF;
  END LOOP;

  INSERT INTO reservations (id, held_until, amount_minor, currency, buyer_ref)
  SELECT coalesce(p_id, gen_random_uuid()), now() + p_hold, sum(p.price_minor),
         CASE WHEN count(DISTINCT p.currency) = 1 THEN min(p.currency) ELSE 'mixed' END, p_buyer
    FROM paintings p WHERE p.id = ANY (p_paintings)
  RETURNING id, held_until INTO v_id, v_until;

  WITH granted AS (
    UPDATE painting_locks l
       SET holder = v_id, held_until = v_until, fence = l.fence + 1
     WHERE l.painting_id = ANY (p_paintings)
    RETURNING l.painting_id, l.fence)
  INSERT INTO reservation_items (reservation_id, painting_id, fence, price_minor)
  SELECT v_id, g.painting_id, g.fence, p.price_minor
    FROM granted g JOIN paintings p ON p.id = g.painting_id;

  IF cardinality(v_claims) > 0 THEN
    UPDATE line_entries e SET state = 'claimed', ended_at = now(), reservation_id = v_id
     WHERE e.id = ANY (v_claims);
  END IF;

  RETURN QUERY SELECT 'granted'::text, NULL::text, v_id, v_until, NULL::text, NULL::bigint;
END;
$$;
