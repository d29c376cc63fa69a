-- Live availability (issue 5): every write that can change what
-- painting_states says of a painting sends the painting's id on the channel
-- paintlock_availability; every gateway LISTENs and re-reads painting_states
-- for those ids (gateway/availability_stream_listener.h), then tells its
-- browsers over Server-Sent Events.
--
-- What must hold:
--   * Every write that changes a column painting_states reads notifies the
--     painting's id: the lock row (holder, held_until, sold_until), the
--     catalogue row (sold_at, and the title, price and currency it shows) and
--     a reservation's state (the view counts a hold only while the holder is
--     held or awaiting_payment). A reservation deleted by the sweep sets its
--     lock rows' holder to NULL, which the lock trigger sees.
--   * The payload is the painting id and nothing else (NOTIFY payloads are
--     queued per database and limited to 8000 bytes). PostgreSQL delivers a
--     notification only after its transaction commits, and folds identical
--     ones of one transaction into one; the listener re-reads the view after
--     delivery, so it always sends the committed truth, never a payload's
--     stale copy of it.
--   * A hold that lapses changes the view with no write at all: no trigger
--     can see it. paintlock_availability() gives, for every reserved
--     painting, the milliseconds until it is free by the database clock, and
--     the listener re-reads those paintings then.
--   * The price: PostgreSQL serialises the commits of notifying transactions
--     (a database-wide lock taken before commit and held through its WAL
--     flush), so state changes lose group commit. Measured on 2 cores with
--     synchronous_commit on: the reserve statement under pgbench went from
--     about 1,000 (32 clients) / 450 (4 clients) to about 230 transactions/s
--     either way, i.e. one fsync per change. The triggers notify only on
--     real changes (WHEN clauses), never on fence-only updates. Setting
--     paintlock.availability_notify = off (per database, role or session)
--     turns the notifications off: streams then learn of changes only from
--     their listeners' periodic full read (30 s) and lapse schedule.

-- False when paintlock.availability_notify is 'off'; unset means on.
CREATE FUNCTION paintlock_availability_notify() RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT coalesce(nullif(current_setting('paintlock.availability_notify', true), ''), 'on') <> 'off';
$$;

CREATE FUNCTION paintlock_notify_painting_lock() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF paintlock_availability_notify() THEN
    PERFORM pg_notify('paintlock_availability', NEW.painting_id);
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER painting_locks_notify_insert AFTER INSERT ON painting_locks
  FOR EACH ROW EXECUTE FUNCTION paintlock_notify_painting_lock();
CREATE TRIGGER painting_locks_notify_update AFTER UPDATE OF holder, held_until, sold_until
  ON painting_locks
  FOR EACH ROW
  WHEN (OLD.holder IS DISTINCT FROM NEW.holder
        OR OLD.held_until IS DISTINCT FROM NEW.held_until
        OR OLD.sold_until IS DISTINCT FROM NEW.sold_until)
  EXECUTE FUNCTION paintlock_notify_painting_lock();

CREATE FUNCTION paintlock_notify_painting() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF paintlock_availability_notify() THEN
    PERFORM pg_notify('paintlock_availability', NEW.id);
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER paintings_notify_insert AFTER INSERT ON paintings
  FOR EACH ROW EXECUTE FUNCTION paintlock_notify_painting();
CREATE TRIGGER paintings_notify_update AFTER UPDATE ON paintings
  FOR EACH ROW
  WHEN (OLD.sold_at IS DISTINCT FROM NEW.sold_at
        OR OLD.title IS DISTINCT FROM NEW.title
        OR OLD.price_minor IS DISTINCT FROM NEW.price_minor
        OR OLD.currency IS DISTINCT FROM NEW.currency)
  EXECUTE FUNCTION paintlock_notify_painting();

-- Only the paintings whose lock names this reservation: the view reads a
-- reservation's state through the lock's holder, nowhere else. Found through
-- reservation_items' primary key, then painting_locks' (holder has no index).
CREATE FUNCTION paintlock_notify_reservation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF paintlock_availability_notify() THEN
    PERFORM pg_notify('paintlock_availability', l.painting_id)
       FROM reservation_items i
       JOIN painting_locks l ON l.painting_id = i.painting_id
      WHERE i.reservation_id = NEW.id AND l.holder = NEW.id;
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER reservations_notify_state AFTER UPDATE OF state ON reservations
  FOR EACH ROW
  WHEN (OLD.state IS DISTINCT FROM NEW.state)
  EXECUTE FUNCTION paintlock_notify_reservation();

-- What the stream sends: painting_states for the given ids (NULL: every
-- painting), with free_at as RFC 3339 and, while reserved, the whole
-- milliseconds until the hold lapses by the database clock (at least 1), so a
-- listener can schedule its re-read without trusting its own clock.
CREATE FUNCTION paintlock_availability(p_ids text[])
RETURNS TABLE (id text, state text, free_at text, free_in_ms bigint)
LANGUAGE sql STABLE AS $$
  SELECT s.id, s.state, paintlock_rfc3339(s.free_at),
         CASE WHEN s.free_at IS NOT NULL
              THEN greatest(1, ceil(extract(epoch FROM (s.free_at - now())) * 1000))::bigint
         END
    FROM painting_states s
   WHERE p_ids IS NULL OR s.id = ANY (p_ids)
   ORDER BY s.id;
$$;
