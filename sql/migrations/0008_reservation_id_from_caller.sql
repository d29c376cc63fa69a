-- Reservation ids chosen by the caller.
--
-- A caller whose connection breaks while paintlock_reserve runs cannot tell
-- whether it committed. With the id chosen before the call (a random UUID), it
-- looks the reservation up by that id and answers the truth. p_id NULL: the
-- database picks one, as before. The three-argument form stays for callers
-- that do not need to know (pgbench scripts).
CREATE FUNCTION paintlock_reserve(p_paintings text[], p_hold interval, p_buyer text, p_id uuid)
RETURNS TABLE (outcome text, painting_id text, reservation_id uuid, until timestamptz,
               stripe_session_id text)
LANGUAGE plpgsql AS $$
DECLARE
  v_id uuid;
  v_until timestamptz;
  v_blocked boolean := false;
BEGIN
  -- Lock first, in one global order (sorted ids); read the holders after, so
  -- what we read cannot change under us.
  PERFORM 1 FROM painting_locks l WHERE l.painting_id = ANY (p_paintings)
   ORDER BY l.painting_id FOR UPDATE;

  RETURN QUERY
    SELECT 'unknown'::text, w.id, NULL::uuid, NULL::timestamptz, NULL::text
      FROM unnest(p_paintings) AS w (id)
     WHERE NOT EXISTS (SELECT 1 FROM painting_locks l WHERE l.painting_id = w.id);
  IF FOUND THEN RETURN; END IF;

  RETURN QUERY
    SELECT CASE
             WHEN p.sold_at IS NOT NULL OR l.sold_until > now() THEN 'sold'
             WHEN l.held_until > now() THEN 'busy'
             ELSE 'takeover'
           END,
           l.painting_id, l.holder,
           CASE WHEN p.sold_at IS NULL AND coalesce(l.sold_until <= now(), true) THEN l.held_until END,
           r.stripe_session_id
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
  IF FOUND THEN RETURN; END IF;

  -- Reservations whose lapsed holds we are taking lose all of their paintings:
  -- a reservation holds all of its paintings or none.
  PERFORM 1 FROM reservations r
   WHERE r.id IN (SELECT l.holder FROM painting_locks l
                   WHERE l.painting_id = ANY (p_paintings) AND l.holder IS NOT NULL)
     AND r.state IN ('held', 'awaiting_payment')
   ORDER BY r.id FOR UPDATE;
  UPDATE reservations r
     SET state = 'released', released_reason = 'lapsed', updated_at = now()
   WHERE r.id IN (SELECT l.holder FROM painting_locks l
                   WHERE l.painting_id = ANY (p_paintings) AND l.holder IS NOT NULL)
     AND r.state IN ('held', 'awaiting_payment');

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

  RETURN QUERY SELECT 'granted'::text, NULL::text, v_id, v_until, NULL::text;
END;
$$;

DROP FUNCTION paintlock_reserve(text[], interval, text);
CREATE FUNCTION paintlock_reserve(p_paintings text[], p_hold interval, p_buyer text)
RETURNS TABLE (outcome text, painting_id text, reservation_id uuid, until timestamptz,
               stripe_session_id text)
LANGUAGE sql AS $$
  SELECT * FROM paintlock_reserve(p_paintings, p_hold, p_buyer, NULL::uuid);
$$;
