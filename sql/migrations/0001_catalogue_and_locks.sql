-- The catalogue, the lock table and reservations (DESIGN.md, "Data").
--
-- Invariants the functions below keep:
--   * A painting_locks row is the single owner of its painting's state; every
--     path that changes who holds or bought a painting locks the painting's
--     lock rows first, in sorted painting id order, so no two paths deadlock.
--   * A reservation "holds" a painting while the lock row names it as holder
--     with the fence it was granted and the reservation is still 'held' or
--     'awaiting_payment'. The hold is live while held_until > now().
--   * Time is the database clock (now()); availability is computed from it in
--     every query, never stored, so a lapsed hold is free without a sweep.

CREATE TABLE paintings (
  id          text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
  title       text NOT NULL CHECK (length(title) BETWEEN 1 AND 300),
  price_minor bigint NOT NULL CHECK (price_minor > 0 AND price_minor < 100000000000),
  currency    text NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
  sold_at     timestamptz,  -- the permanent catalogue flag
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE reservations (
  id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  state             text NOT NULL DEFAULT 'held'
                    CHECK (state IN ('held', 'awaiting_payment', 'sold', 'released')),
  released_reason   text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  held_until        timestamptz NOT NULL,
  amount_minor      bigint NOT NULL,
  currency          text NOT NULL,  -- 'mixed' for a server-to-server cart of several currencies
  buyer_ref         text CHECK (length(buyer_ref) <= 200),
  stripe_session_id text UNIQUE,
  stripe_expires_at timestamptz,
  -- What Stripe last told us of the session: open, complete, expired.
  stripe_status     text,
  payment_intent    text,
  sold_at           timestamptz
);
CREATE INDEX reservations_live ON reservations (held_until) WHERE state IN ('held', 'awaiting_payment');

CREATE TABLE reservation_items (
  reservation_id uuid NOT NULL REFERENCES reservations (id) ON DELETE CASCADE,
  painting_id    text NOT NULL REFERENCES paintings (id),
  fence          bigint NOT NULL,  -- the lock's fence when this reservation was granted it
  price_minor    bigint NOT NULL,
  PRIMARY KEY (reservation_id, painting_id)
);
CREATE INDEX reservation_items_painting ON reservation_items (painting_id);

CREATE TABLE painting_locks (
  painting_id text PRIMARY KEY REFERENCES paintings (id),
  holder      uuid REFERENCES reservations (id) ON DELETE SET NULL,
  held_until  timestamptz,
  sold_until  timestamptz,  -- sold by a payment: refused until then, then the catalogue flag rules
  fence       bigint NOT NULL DEFAULT 0  -- grows on every grant
);

-- Every Stripe event applied, with its outcome: deduplication and audit.
CREATE TABLE stripe_events (
  id             text PRIMARY KEY,
  type           text NOT NULL,
  session_id     text,
  reservation_id uuid,
  outcome        text NOT NULL,
  received_at    timestamptz NOT NULL DEFAULT now(),
  applied_at     timestamptz
);
CREATE INDEX stripe_events_session ON stripe_events (session_id);

-- Every admin action and automatic decision that moved money or a painting.
CREATE TABLE audit_log (
  id             bigserial PRIMARY KEY,
  at             timestamptz NOT NULL DEFAULT now(),
  actor          text NOT NULL,  -- gateway, webhook, success_page, paintlockctl
  action         text NOT NULL,
  reservation_id uuid,
  painting_id    text,
  session_id     text,
  reason         text,
  details        jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_reservation ON audit_log (reservation_id);
CREATE INDEX audit_log_painting ON audit_log (painting_id);

-- Takes every painting of p_paintings for a new reservation, or none.
--
-- Returns one 'granted' row (reservation_id, until = held_until), or the
-- reasons nothing was granted, one row per painting in the way:
--   'unknown'  no such painting
--   'sold'     sold (catalogue flag, or a sale still in its 24 h window)
--   'busy'     held by a live reservation; until = when it will be free
--   'takeover' the hold lapsed but its Stripe session (stripe_session_id) may
--              still be open: the caller must expire it at Stripe first
--              (paintlock_settle_lapsed) and try again.
CREATE FUNCTION paintlock_reserve(p_paintings text[], p_hold interval, p_buyer text)
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

  INSERT INTO reservations (held_until, amount_minor, currency, buyer_ref)
  SELECT now() + p_hold, sum(p.price_minor),
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

-- Locks a reservation's lock rows in sorted order: every function that changes
-- a reservation's hold calls this first.
CREATE FUNCTION paintlock_lock_reservation(p_reservation uuid) RETURNS void
LANGUAGE sql AS $$
  SELECT NULL::void FROM (
    SELECT 1 FROM painting_locks l
     WHERE l.painting_id IN (SELECT i.painting_id FROM reservation_items i
                              WHERE i.reservation_id = p_reservation)
     ORDER BY l.painting_id FOR UPDATE) AS locked
  LIMIT 0;
$$;

-- True while the reservation is the holder, with its own fence, of every one
-- of its paintings (whether or not the hold has lapsed).
CREATE FUNCTION paintlock_holds_all(p_reservation uuid) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT NOT EXISTS (
    SELECT 1 FROM reservation_items i
      JOIN painting_locks l ON l.painting_id = i.painting_id
     WHERE i.reservation_id = p_reservation
       AND (l.holder IS DISTINCT FROM p_reservation OR l.fence <> i.fence))
     AND EXISTS (SELECT 1 FROM reservations r
                  WHERE r.id = p_reservation AND r.state IN ('held', 'awaiting_payment'));
$$;

-- Attaches a Stripe Checkout Session to a reservation that still holds its
-- paintings. Returns false (and attaches nothing) if it lost them while Stripe
-- answered: the caller then expires the session.
CREATE FUNCTION paintlock_attach_session(p_reservation uuid, p_session text,
                                         p_expires_at timestamptz) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM paintlock_lock_reservation(p_reservation);
  UPDATE reservations r
     SET stripe_session_id = p_session, stripe_expires_at = p_expires_at,
         stripe_status = 'open', updated_at = now()
   WHERE r.id = p_reservation AND r.state = 'held'
     AND (r.stripe_session_id IS NULL OR r.stripe_session_id = p_session)
     AND paintlock_holds_all(p_reservation);
  RETURN FOUND;
END;
$$;

-- Releases a held reservation's paintings. Returns the reservation's state
-- afterwards ('released', or 'sold' / 'awaiting_payment' which a release does
-- not undo), or NULL for an unknown reservation. Idempotent.
CREATE FUNCTION paintlock_release(p_reservation uuid, p_reason text, p_actor text)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  v_state text;
BEGIN
  PERFORM paintlock_lock_reservation(p_reservation);
  SELECT r.state INTO v_state FROM reservations r WHERE r.id = p_reservation FOR UPDATE;
  IF NOT FOUND THEN RETURN NULL; END IF;
  IF v_state <> 'held' THEN RETURN v_state; END IF;
  UPDATE painting_locks l SET holder = NULL, held_until = NULL
   WHERE l.holder = p_reservation;
  UPDATE reservations r SET state = 'released', released_reason = p_reason, updated_at = now()
   WHERE r.id = p_reservation;
  INSERT INTO audit_log (actor, action, reservation_id, session_id, reason)
  SELECT p_actor, 'release', p_reservation, r.stripe_session_id, p_reason
    FROM reservations r WHERE r.id = p_reservation;
  RETURN 'released';
END;
$$;

-- Every painting gets its lock row; the catalogue import relies on it.
CREATE FUNCTION paintlock_painting_lock_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO painting_locks (painting_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
  RETURN NEW;
END;
$$;
CREATE TRIGGER paintings_lock_row AFTER INSERT ON paintings
  FOR EACH ROW EXECUTE FUNCTION paintlock_painting_lock_row();

-- RFC 3339 in UTC, rounded up to the whole second: a buyer told "free at"
-- must never come back a fraction of a second too early.
CREATE FUNCTION paintlock_rfc3339(t timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT to_char((date_trunc('second', t) + CASE WHEN t > date_trunc('second', t)
                                                 THEN interval '1 second' ELSE interval '0' END)
                 AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"');
$$;

-- Whole seconds from now until t, at least 1: the Retry-After header.
CREATE FUNCTION paintlock_seconds_until(t timestamptz) RETURNS integer
LANGUAGE sql STABLE AS $$
  SELECT greatest(1, ceil(extract(epoch FROM (t - now())))::integer);
$$;

-- What a buyer sees of each painting, computed from the database clock.
CREATE VIEW painting_states AS
SELECT p.id, p.title, p.price_minor, p.currency,
       CASE
         WHEN p.sold_at IS NOT NULL OR l.sold_until > now() THEN 'sold'
         WHEN r.state IN ('held', 'awaiting_payment') AND l.held_until > now() THEN 'reserved'
         ELSE 'available'
       END AS state,
       CASE
         WHEN p.sold_at IS NULL AND coalesce(l.sold_until <= now(), true)
          AND r.state IN ('held', 'awaiting_payment') AND l.held_until > now()
         THEN l.held_until
       END AS free_at
  FROM paintings p
  JOIN painting_locks l ON l.painting_id = p.id
  LEFT JOIN reservations r ON r.id = l.holder;
