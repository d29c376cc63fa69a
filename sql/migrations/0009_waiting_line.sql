-- A fair waiting line per painting (docs/ARCHITECTURE.md, "The waiting line").
--
-- A buyer who finds a painting held may join its line. When the hold ends
-- without a sale (it lapses, or is released), the painting passes to the line
-- one claim window at a time, in order of joining: during entry k's window
-- only a reservation carrying entry k's line token is granted; the others get
-- 'busy' with the window's end. A sale closes the line.
--
-- What must hold:
--   * The current claimant is computed from rows and now(), never from a job
--     having run (invariant 5). paintlock_line_chain() gives every waiting
--     entry its window: the chain starts at
--         start = greatest(painting_locks.line_turn_from,
--                          held_until of the lock's holder, if any)
--     and waiting entry k (in id order) owns [start + c(k-1), start + c(k)),
--     c(k) the sum of the first k entries' claim windows. While a hold is live
--     start = held_until is in the future: nobody's turn yet.
--   * Writes that move the chain keep every remaining window where the rows
--     and now() put it before the write:
--       - settling (paintlock_line_settle) marks entries whose window ended
--         'passed' and moves line_turn_from to the end of the last of them;
--       - the current claimant leaving starts the next one's window now;
--       - a claimant's reservation restarts the chain at that hold's end;
--       - a hold ending by release (holder set NULL) records when the
--         painting became free in line_turn_from (trigger below), since the
--         lock row no longer says; a hold that lapses records nothing: its
--         held_until is still on the row.
--     line_turn_from only grows, and is never ahead of now() when written, so
--     a later hold's held_until always wins over it.
--   * Every change of an entry or of line_turn_from happens with the
--     painting's lock row locked FOR UPDATE, as every reservation does, so
--     joins, leaves, claims and sales are serialised per painting and an
--     entry's id order is its order of joining.
--   * A sale (paintings.sold_at set) closes every waiting entry in the
--     selling transaction (trigger below). While a painting is sold its line
--     is reported closed whatever the rows say.
--   * The line token is a secret of the buyer; only its SHA-256 (hex) is
--     stored. The visitor is the gateway's keyed visitor hash.
--   * The cost for a painting nobody queues for: paintlock_reserve probes the
--     partial index line_entries_waiting once; the release trigger is a
--     WHEN-filtered BEFORE trigger that only assigns a column.

ALTER TABLE painting_locks ADD COLUMN line_turn_from timestamptz;

CREATE TABLE line_entries (
  id            bigserial PRIMARY KEY,  -- the order of joining, per painting
  painting_id   text NOT NULL REFERENCES paintings (id),
  token_sha256  text NOT NULL UNIQUE CHECK (token_sha256 ~ '^[0-9a-f]{64}$'),
  visitor       text NOT NULL CHECK (length(visitor) BETWEEN 1 AND 64),
  claim_window  interval NOT NULL
                CHECK (claim_window >= interval '1 second' AND claim_window <= interval '1 hour'),
  joined_at     timestamptz NOT NULL DEFAULT now(),
  state         text NOT NULL DEFAULT 'waiting'
                CHECK (state IN ('waiting', 'claimed', 'passed', 'left', 'closed')),
  ended_at      timestamptz,  -- when it stopped waiting (a passed entry: its window's end)
  ended_reason  text,         -- closed: 'sold' or 'cleared: <reason>'
  reservation_id uuid         -- claimed: the reservation its turn was used for
);
CREATE INDEX line_entries_waiting ON line_entries (painting_id, id) WHERE state = 'waiting';
CREATE INDEX line_entries_visitor ON line_entries (painting_id, visitor) WHERE state = 'waiting';

-- Every waiting entry of a painting with its rank (1-based, in order of
-- joining) and claim window, by the rules above. Includes entries whose
-- window has ended but which are not yet settled.
CREATE FUNCTION paintlock_line_chain(p_painting text)
RETURNS TABLE (entry_id bigint, token_sha256 text, visitor text, rank bigint,
               window_from timestamptz, window_until timestamptz)
LANGUAGE sql STABLE AS $$
  SELECT e.id, e.token_sha256, e.visitor, row_number() OVER w,
         s.start + sum(e.claim_window) OVER w - e.claim_window,
         s.start + sum(e.claim_window) OVER w
    FROM painting_locks l
   CROSS JOIN LATERAL (
         SELECT greatest(l.line_turn_from,
                         CASE WHEN l.holder IS NOT NULL THEN l.held_until END) AS start) s
    JOIN line_entries e ON e.painting_id = l.painting_id AND e.state = 'waiting'
   WHERE l.painting_id = p_painting
  WINDOW w AS (ORDER BY e.id ROWS UNBOUNDED PRECEDING);
$$;

-- True while the painting is sold (the catalogue flag or a sale's window).
CREATE FUNCTION paintlock_painting_sold(p_painting text) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT coalesce((SELECT p.sold_at IS NOT NULL OR coalesce(l.sold_until > now(), false)
                     FROM paintings p JOIN painting_locks l ON l.painting_id = p.id
                    WHERE p.id = p_painting), false);
$$;

-- True while a live reservation holds the painting (its hold not lapsed).
CREATE FUNCTION paintlock_painting_held(p_painting text) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM painting_locks l JOIN reservations r ON r.id = l.holder
                  WHERE l.painting_id = p_painting AND r.state IN ('held', 'awaiting_payment')
                    AND l.held_until > now());
$$;

-- Writes down what the rows and now() already say: entries whose window has
-- ended become 'passed' and the chain restarts at the last one's end; a sold
-- painting's entries become 'closed'. The caller holds the lock row.
CREATE FUNCTION paintlock_line_settle(p_painting text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_last timestamptz;
BEGIN
  IF paintlock_painting_sold(p_painting) THEN
    UPDATE line_entries e SET state = 'closed', ended_at = now(), ended_reason = 'sold'
     WHERE e.painting_id = p_painting AND e.state = 'waiting';
    RETURN;
  END IF;
  WITH passed AS (
    UPDATE line_entries e SET state = 'passed', ended_at = c.window_until
      FROM paintlock_line_chain(p_painting) c
     WHERE e.id = c.entry_id AND c.window_until <= now()
    RETURNING c.window_until)
  SELECT max(window_until) INTO v_last FROM passed;
  IF v_last IS NOT NULL THEN
    UPDATE painting_locks l SET line_turn_from = greatest(l.line_turn_from, v_last)
     WHERE l.painting_id = p_painting;
  END IF;
END;
$$;

-- A hold that ends by release (holder set to NULL) leaves no trace of when
-- the painting became free; the chain needs it. A hold released after it
-- lapsed freed the painting at its held_until.
CREATE FUNCTION paintlock_line_hold_ended() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.line_turn_from := greatest(OLD.line_turn_from, least(now(), OLD.held_until));
  RETURN NEW;
END;
$$;
CREATE TRIGGER painting_locks_line_hold_ended BEFORE UPDATE OF holder ON painting_locks
  FOR EACH ROW WHEN (OLD.holder IS NOT NULL AND NEW.holder IS NULL)
  EXECUTE FUNCTION paintlock_line_hold_ended();

-- A sale closes the line, in the selling transaction (which holds the lock row).
CREATE FUNCTION paintlock_line_close_on_sale() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE line_entries e SET state = 'closed', ended_at = now(), ended_reason = 'sold'
   WHERE e.painting_id = NEW.id AND e.state = 'waiting';
  RETURN NULL;
END;
$$;
CREATE TRIGGER paintings_line_close_on_sale AFTER UPDATE OF sold_at ON paintings
  FOR EACH ROW WHEN (OLD.sold_at IS NULL AND NEW.sold_at IS NOT NULL)
  EXECUTE FUNCTION paintlock_line_close_on_sale();

-- One entry as its holder sees it now.
--   state: waiting | your_turn | claimed | passed | left | closed
--   position: 1 for the current claimant (or the first to be), counting only
--             entries whose window has not ended; NULL unless waiting/your_turn
--   window_from/window_until: the entry's claim window as things stand (it
--             moves when a hold is extended or someone ahead leaves)
--   line_length: entries still waiting (windows not ended)
CREATE FUNCTION paintlock_line_entry(p_painting text, p_token_sha256 text)
RETURNS TABLE (entry_id bigint, state text, entry_position bigint, window_from timestamptz,
               window_until timestamptz, line_length bigint, joined_at timestamptz,
               reservation_id uuid)
LANGUAGE sql STABLE AS $$
  WITH chain AS (SELECT * FROM paintlock_line_chain(p_painting) WHERE window_until > now()),
       me AS (SELECT e.* FROM line_entries e
               WHERE e.painting_id = p_painting AND e.token_sha256 = p_token_sha256)
  SELECT me.id,
         CASE
           WHEN me.state <> 'waiting' THEN me.state
           WHEN paintlock_painting_sold(p_painting) THEN 'closed'
           WHEN c.entry_id IS NULL THEN 'passed'
           WHEN c.window_from <= now() THEN 'your_turn'
           ELSE 'waiting'
         END,
         CASE WHEN me.state = 'waiting' AND c.entry_id IS NOT NULL
                   AND NOT paintlock_painting_sold(p_painting)
              THEN (SELECT count(*) FROM chain k WHERE k.rank <= c.rank) END,
         c.window_from, c.window_until,
         CASE WHEN paintlock_painting_sold(p_painting) THEN 0
              ELSE (SELECT count(*) FROM chain) END,
         me.joined_at, me.reservation_id
    FROM me LEFT JOIN chain c ON c.entry_id = me.id;
$$;

-- Joins a painting's line.
-- Outcomes (one row): joined (with the entry as paintlock_line_entry gives
-- it), unknown, sold, free (nobody holds it and no line runs: buy it now),
-- already_in_line (the visitor has p_per_visitor entries waiting), line_full
-- (p_max entries waiting). Nothing is written unless 'joined'.
CREATE FUNCTION paintlock_line_join(p_painting text, p_token_sha256 text, p_visitor text,
                                    p_claim interval, p_max integer, p_per_visitor integer)
RETURNS TABLE (outcome text, entry_position bigint, window_from timestamptz,
               window_until timestamptz, line_length bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_waiting bigint;
BEGIN
  PERFORM 1 FROM painting_locks l WHERE l.painting_id = p_painting FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'unknown'::text, NULL::bigint, NULL::timestamptz, NULL::timestamptz,
                        NULL::bigint;
    RETURN;
  END IF;
  IF paintlock_painting_sold(p_painting) THEN
    RETURN QUERY SELECT 'sold'::text, NULL::bigint, NULL::timestamptz, NULL::timestamptz,
                        NULL::bigint;
    RETURN;
  END IF;
  PERFORM paintlock_line_settle(p_painting);
  SELECT count(*) INTO v_waiting FROM line_entries e
   WHERE e.painting_id = p_painting AND e.state = 'waiting';
  IF v_waiting = 0 AND NOT paintlock_painting_held(p_painting) THEN
    RETURN QUERY SELECT 'free'::text, NULL::bigint, NULL::timestamptz, NULL::timestamptz, 0::bigint;
    RETURN;
  END IF;
  IF (SELECT count(*) FROM line_entries e
       WHERE e.painting_id = p_painting AND e.state = 'waiting'
         AND e.visitor = p_visitor) >= p_per_visitor THEN
    RETURN QUERY SELECT 'already_in_line'::text, NULL::bigint, NULL::timestamptz,
                        NULL::timestamptz, v_waiting;
    RETURN;
  END IF;
  IF v_waiting >= p_max THEN
    RETURN QUERY SELECT 'line_full'::text, NULL::bigint, NULL::timestamptz, NULL::timestamptz,
                        v_waiting;
    RETURN;
  END IF;
  -- The chain needs a start even before any hold of this painting ended; a
  -- start in the past never beats a live hold's held_until.
  UPDATE painting_locks l SET line_turn_from = now()
   WHERE l.painting_id = p_painting AND l.line_turn_from IS NULL;
  INSERT INTO line_entries (painting_id, token_sha256, visitor, claim_window)
  VALUES (p_painting, p_token_sha256, p_visitor, p_claim);
  RETURN QUERY SELECT 'joined'::text, m.entry_position, m.window_from, m.window_until,
                      m.line_length
                 FROM paintlock_line_entry(p_painting, p_token_sha256) m;
END;
$$;

-- Leaves a line. Outcomes (one row, with the entry's state before):
-- left, not_waiting (passed, claimed, left or closed already: nothing
-- changed), unknown (no entry of this painting has that token).
CREATE FUNCTION paintlock_line_leave(p_painting text, p_token_sha256 text)
RETURNS TABLE (outcome text, state text)
LANGUAGE plpgsql AS $$
DECLARE
  v_entry bigint;
  v_state text;
  v_turn boolean;
BEGIN
  PERFORM 1 FROM painting_locks l WHERE l.painting_id = p_painting FOR UPDATE;
  PERFORM paintlock_line_settle(p_painting);
  SELECT m.entry_id, m.state INTO v_entry, v_state
    FROM paintlock_line_entry(p_painting, p_token_sha256) m;
  IF v_entry IS NULL THEN
    RETURN QUERY SELECT 'unknown'::text, NULL::text;
    RETURN;
  END IF;
  IF v_state NOT IN ('waiting', 'your_turn') THEN
    RETURN QUERY SELECT 'not_waiting'::text, v_state;
    RETURN;
  END IF;
  IF v_state = 'your_turn' THEN
    -- The next in line gets a whole window, from now.
    UPDATE painting_locks l SET line_turn_from = greatest(l.line_turn_from, now())
     WHERE l.painting_id = p_painting;
  END IF;
  UPDATE line_entries e SET state = 'left', ended_at = now() WHERE e.id = v_entry;
  RETURN QUERY SELECT 'left'::text, v_state;
END;
$$;

-- Empties a line (an operator's decision), audited. Returns how many waiting
-- entries were closed, NULL for an unknown painting.
CREATE FUNCTION paintlock_line_clear(p_painting text, p_reason text, p_actor text)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  v_closed bigint;
BEGIN
  PERFORM 1 FROM painting_locks l WHERE l.painting_id = p_painting FOR UPDATE;
  IF NOT FOUND THEN RETURN NULL; END IF;
  PERFORM paintlock_line_settle(p_painting);
  WITH closed AS (
    UPDATE line_entries e
       SET state = 'closed', ended_at = now(), ended_reason = 'cleared: ' || p_reason
     WHERE e.painting_id = p_painting AND e.state = 'waiting'
    RETURNING 1)
  SELECT count(*) INTO v_closed FROM closed;
  INSERT INTO audit_log (actor, action, painting_id, reason, details)
  VALUES (p_actor, 'line_clear', p_painting, p_reason, jsonb_build_object('closed', v_closed));
  RETURN v_closed;
END;
$$;

-- paintlock_reserve with a line token (the SHA-256 hex of the buyer's token,
-- or NULL): the 0008 function with the line's gate between "unknown" and the
-- rest. The body is 0008's, not a call to it, so that the probe for a line
-- runs after the lock rows are locked (a join cannot slip in between) and a
-- cart without a line pays that one probe and nothing more. Everything
-- 0001/0008 say holds, and besides:
--   * For a painting whose line runs (not held, not sold, a waiting entry's
--     window covers now()), only the token of that window's entry is granted;
--     any other caller gets 'busy' with until = the window's end, and nothing
--     is reserved. The entry whose window it is becomes 'claimed' by the new
--     reservation.
--   * line_position: on an extra 'in_line' row for each painting of the cart
--     whose line the caller's token waits in, its position there. Such rows
--     come only with rows that stand in the way.
-- The three- and four-argument forms go through this one (no token), so no
-- caller passes the line by.
CREATE FUNCTION paintlock_reserve(p_paintings text[], p_hold interval, p_buyer text, p_id uuid,
                                  p_line_token text)
RETURNS TABLE (outcome text, painting_id text, reservation_id uuid, until timestamptz,
               stripe_session_id text, line_position bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_id uuid;
  v_until timestamptz;
  v_line_busy boolean := false;
  v_claims bigint[] := '{}';
  v_painting text;
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

  IF cardinality(v_claims) > 0 THEN
    UPDATE line_entries e SET state = 'claimed', ended_at = now(), reservation_id = v_id
     WHERE e.id = ANY (v_claims);
  END IF;

  RETURN QUERY SELECT 'granted'::text, NULL::text, v_id, v_until, NULL::text, NULL::bigint;
END;
$$;

CREATE OR REPLACE FUNCTION paintlock_reserve(p_paintings text[], p_hold interval, p_buyer text,
                                             p_id uuid)
RETURNS TABLE (outcome text, painting_id text, reservation_id uuid, until timestamptz,
               stripe_session_id text)
LANGUAGE sql AS $$
  SELECT r.outcome, r.painting_id, r.reservation_id, r.until, r.stripe_session_id
    FROM paintlock_reserve(p_paintings, p_hold, p_buyer, p_id, NULL::text) r
   WHERE r.outcome <> 'in_line';
$$;

-- What a buyer sees of each painting, now with the line: while a claim window
-- runs the painting is 'reserved' (for its claimant) until the window's end,
-- and line_length counts the entries still waiting.
CREATE OR REPLACE VIEW painting_states AS
SELECT p.id, p.title, p.price_minor, p.currency,
       CASE
         WHEN p.sold_at IS NOT NULL OR l.sold_until > now() THEN 'sold'
         WHEN r.state IN ('held', 'awaiting_payment') AND l.held_until > now() THEN 'reserved'
         WHEN t.turn_until IS NOT NULL THEN 'reserved'
         ELSE 'available'
       END AS state,
       CASE
         WHEN p.sold_at IS NOT NULL OR coalesce(l.sold_until > now(), false) THEN NULL
         WHEN r.state IN ('held', 'awaiting_payment') AND l.held_until > now() THEN l.held_until
         ELSE t.turn_until
       END AS free_at,
       CASE WHEN p.sold_at IS NOT NULL OR coalesce(l.sold_until > now(), false) THEN 0
            ELSE coalesce(t.waiting, 0) END AS line_length
  FROM paintings p
  JOIN painting_locks l ON l.painting_id = p.id
  LEFT JOIN reservations r ON r.id = l.holder
  LEFT JOIN LATERAL (
    SELECT count(*) AS waiting,
           min(c.window_until) FILTER (WHERE c.window_from <= now()) AS turn_until
      FROM paintlock_line_chain(p.id) c
     WHERE c.window_until > now()) t ON true;

-- The stream's read, with each painting's line length.
DROP FUNCTION paintlock_availability(text[]);
CREATE FUNCTION paintlock_availability(p_ids text[])
RETURNS TABLE (id text, state text, free_at text, free_in_ms bigint, line_length bigint)
LANGUAGE sql STABLE AS $$
  SELECT s.id, s.state, paintlock_rfc3339(s.free_at),
         CASE WHEN s.free_at IS NOT NULL
              THEN greatest(1, ceil(extract(epoch FROM (s.free_at - now())) * 1000))::bigint
         END,
         s.line_length
    FROM painting_states s
   WHERE p_ids IS NULL OR s.id = ANY (p_ids)
   ORDER BY s.id;
$$;
