-- 0012: a painting taken off sale without being sold, and back.
--
-- paintings.withdrawn_at (with the operator's reason) marks a painting the
-- seller keeps back: not sold, not reservable. What must hold:
--   * A withdrawn painting is never granted. The gate runs under the
--     painting's lock row: paintlock_reserve_on_sale() locks the cart's rows
--     FOR UPDATE in sorted order (as every reservation does) before it reads
--     withdrawn_at, and paintlock_admin_withdraw() sets it under the same
--     lock, so a withdrawal and a reservation are ordered by the row lock.
--     The four- and three-argument forms of paintlock_reserve go through the
--     gate too; only the five-argument form (called by the gate) does not.
--   * A painting is withdrawn only when nobody may be paying for it: no live
--     hold and no holder whose Stripe session may still be paid (the same
--     test as paintlock_admin_mark_sold). A sold painting is not withdrawn
--     (it is not on sale anyway). The operator releases the hold first.
--   * Withdrawing closes the painting's waiting line (ended_reason
--     'withdrawn: <reason>'): nobody is owed a turn at a painting kept back.
--   * What buyers see (painting_states, hence the catalogue and the
--     availability stream) says 'withdrawn', after 'sold' and before any
--     hold, with no free_at and no line.
--   * Both directions are audited (actions 'withdraw' and 'restore'), with
--     the reason. Availability is published by the caller after commit
--     (0007), like every other writer.

ALTER TABLE paintings
  ADD COLUMN withdrawn_at timestamptz,
  ADD COLUMN withdrawn_reason text CHECK (length(withdrawn_reason) BETWEEN 1 AND 500),
  ADD CONSTRAINT paintings_withdrawn_has_reason
    CHECK ((withdrawn_at IS NULL) = (withdrawn_reason IS NULL));

-- Returns one row (outcome, holder, holder_state, until):
--   withdrawn          done, audited
--   already_withdrawn  nothing changed
--   sold               refused: a sold painting is not on sale
--   held               refused: the holder, its state, and when its hold ends
--                      (NULL while its Stripe session may still be paid)
--   unknown            no such painting
CREATE FUNCTION paintlock_admin_withdraw(p_painting text, p_reason text, p_actor text)
RETURNS TABLE (outcome text, holder uuid, holder_state text, until timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
  v_holder uuid;
  v_holder_state text;
  v_until timestamptz;
  v_closed bigint;
BEGIN
  PERFORM 1 FROM painting_locks l WHERE l.painting_id = p_painting FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'unknown'::text, NULL::uuid, NULL::text, NULL::timestamptz;
    RETURN;
  END IF;
  IF EXISTS (SELECT 1 FROM paintings p JOIN painting_locks l ON l.painting_id = p.id
              WHERE p.id = p_painting AND (p.sold_at IS NOT NULL OR l.sold_until > now())) THEN
    RETURN QUERY SELECT 'sold'::text, NULL::uuid, NULL::text, NULL::timestamptz;
    RETURN;
  END IF;
  IF EXISTS (SELECT 1 FROM paintings p WHERE p.id = p_painting AND p.withdrawn_at IS NOT NULL) THEN
    RETURN QUERY SELECT 'already_withdrawn'::text, NULL::uuid, NULL::text, NULL::timestamptz;
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

  UPDATE paintings p SET withdrawn_at = now(), withdrawn_reason = p_reason, updated_at = now()
   WHERE p.id = p_painting;
  WITH closed AS (
    UPDATE line_entries e
       SET state = 'closed', ended_at = now(), ended_reason = 'withdrawn: ' || p_reason
     WHERE e.painting_id = p_painting AND e.state = 'waiting'
    RETURNING 1)
  SELECT count(*) INTO v_closed FROM closed;
  INSERT INTO audit_log (actor, action, painting_id, reason, details)
  VALUES (p_actor, 'withdraw', p_painting, p_reason,
          jsonb_build_object('line_entries_closed', v_closed));
  RETURN QUERY SELECT 'withdrawn'::text, NULL::uuid, NULL::text, NULL::timestamptz;
END;
$$;

-- Returns one row (outcome): restored (audited), not_withdrawn (nothing
-- changed) or unknown.
CREATE FUNCTION paintlock_admin_restore(p_painting text, p_reason text, p_actor text)
RETURNS TABLE (outcome text)
LANGUAGE plpgsql AS $$
DECLARE
  v_since timestamptz;
BEGIN
  PERFORM 1 FROM painting_locks l WHERE l.painting_id = p_painting FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'unknown'::text;
    RETURN;
  END IF;
  SELECT p.withdrawn_at INTO v_since FROM paintings p WHERE p.id = p_painting;
  IF v_since IS NULL THEN
    RETURN QUERY SELECT 'not_withdrawn'::text;
    RETURN;
  END IF;
  UPDATE paintings p SET withdrawn_at = NULL, withdrawn_reason = NULL, updated_at = now()
   WHERE p.id = p_painting;
  INSERT INTO audit_log (actor, action, painting_id, reason, details)
  VALUES (p_actor, 'restore', p_painting, p_reason,
          jsonb_build_object('withdrawn_since', v_since));
  RETURN QUERY SELECT 'restored'::text;
END;
$$;

-- The reservation gate: paintlock_reserve (five arguments, 0009) for a cart
-- none of whose paintings is withdrawn. Locks the cart's lock rows first, in
-- sorted order; paintlock_reserve locks them again (a no-op for the row's
-- owner). A cart with an unknown painting answers 'unknown' for it, and one
-- with withdrawn paintings answers 'withdrawn' for each, with nothing
-- reserved; the caller ranks them like 'unknown' and 'sold'.
CREATE FUNCTION paintlock_reserve_on_sale(p_paintings text[], p_hold interval, p_buyer text,
                                          p_id uuid, p_line_token text)
RETURNS TABLE (outcome text, painting_id text, reservation_id uuid, until timestamptz,
               stripe_session_id text, line_position bigint)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM painting_locks l WHERE l.painting_id = ANY (p_paintings)
   ORDER BY l.painting_id FOR UPDATE;
  RETURN QUERY
    SELECT 'withdrawn'::text, p.id, NULL::uuid, NULL::timestamptz, NULL::text, NULL::bigint
      FROM paintings p
     WHERE p.id = ANY (p_paintings) AND p.withdrawn_at IS NOT NULL
     ORDER BY p.id;
  IF FOUND THEN
    RETURN QUERY
      SELECT 'unknown'::text, w.id, NULL::uuid, NULL::timestamptz, NULL::text, NULL::bigint
        FROM unnest(p_paintings) AS w (id)
       WHERE NOT EXISTS (SELECT 1 FROM painting_locks l WHERE l.painting_id = w.id);
    RETURN;
  END IF;
  RETURN QUERY SELECT * FROM paintlock_reserve(p_paintings, p_hold, p_buyer, p_id, p_line_token);
END;
$$;

CREATE OR REPLACE FUNCTION paintlock_reserve(p_paintings text[], p_hold interval, p_buyer text,
                                             p_id uuid)
RETURNS TABLE (outcome text, painting_id text, reservation_id uuid, until timestamptz,
               stripe_session_id text)
LANGUAGE sql AS $$
  SELECT r.outcome, r.painting_id, r.reservation_id, r.until, r.stripe_session_id
    FROM paintlock_reserve_on_sale(p_paintings, p_hold, p_buyer, p_id, NULL::text) r
   WHERE r.outcome <> 'in_line';
$$;

-- 0009's view with 'withdrawn' between 'sold' and the holds.
CREATE OR REPLACE VIEW painting_states AS
SELECT p.id, p.title, p.price_minor, p.currency,
       CASE
         WHEN p.sold_at IS NOT NULL OR l.sold_until > now() THEN 'sold'
         WHEN p.withdrawn_at IS NOT NULL THEN 'withdrawn'
         WHEN r.state IN ('held', 'awaiting_payment') AND l.held_until > now() THEN 'reserved'
         WHEN t.turn_until IS NOT NULL THEN 'reserved'
         ELSE 'available'
       END AS state,
       CASE
         WHEN p.sold_at IS NOT NULL OR coalesce(l.sold_until > now(), false) THEN NULL
         WHEN p.withdrawn_at IS NOT NULL THEN NULL
         WHEN r.state IN ('held', 'awaiting_payment') AND l.held_until > now() THEN l.held_until
         ELSE t.turn_until
       END AS free_at,
       CASE WHEN p.sold_at IS NOT NULL OR coalesce(l.sold_until > now(), false)
                 OR p.withdrawn_at IS NOT NULL THEN 0
            ELSE coalesce(t.waiting, 0) END AS line_length
  FROM paintings p
  JOIN painting_locks l ON l.painting_id = p.id
  LEFT JOIN reservations r ON r.id = l.holder
  LEFT JOIN LATERAL (
    SELECT count(*) AS waiting,
           min(c.window_until) FILTER (WHERE c.window_from <= now()) AS turn_until
      FROM paintlock_line_chain(p.id) c
     WHERE c.window_until > now()) t ON true;
