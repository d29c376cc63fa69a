-- A reserve reads the reservations holding its cart by key, whatever the
-- statistics said when its connection planned it.
--
-- paintlock_reserve runs one generic plan per connection (0020), made on the
-- connection's first reserve from the statistics of that moment. Its check of
-- what stands in the way joined painting_locks to reservations. After the
-- bench's reset, or in a shop that had no reservations when its gateways
-- connected, `reservations` was analysed empty; the plan then walked the
-- whole primary key of reservations (a full index scan, which
-- enable_seqscan = off does not forbid) into a Materialize and filtered every
-- row against each lock, on every reserve, until autovacuum's next ANALYZE
-- replaced the plan. The walk grows with the table:
--   auto_explain, pgbench on reserve.sql, 32 clients: one check 13 ms,
--   "Rows Removed by Join Filter: 6954"; pg_stat_statements over six 10 s
--   phases alike: that statement 0.17–1.52 ms on average, the reserve
--   0.76–2.51 ms, 1,922–3,557 tps (which phases were slow depended on when
--   autovacuum happened to analyse).
-- The reservation and the painting of each lock row are now read through
-- LATERAL subqueries with LIMIT 1, which PostgreSQL plans on their own and
-- never flattens into a join: each is an index lookup by the lock row's key,
-- at any table size and with any statistics. The function is restated whole,
-- with only that join changed; the plan settings of 0020 are restated with it
-- (CREATE OR REPLACE drops them). tests/reservations_test.cc counts the index
-- entries a reserve reads.

CREATE OR REPLACE FUNCTION paintlock_reserve(p_paintings text[], p_hold interval, p_buyer text,
                                             p_id uuid, p_line_token text)
RETURNS TABLE (outcome text, painting_id text, reservation_id uuid, until timestamptz,
               stripe_session_id text, line_position bigint)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
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
      -- Each a lookup by key: LIMIT 1 keeps the planner from flattening them
      -- into joins (see the head of 0023).
      CROSS JOIN LATERAL (SELECT p.sold_at FROM paintings p
                           WHERE p.id = l.painting_id LIMIT 1) p
      LEFT JOIN LATERAL (SELECT r.state, r.stripe_session_id, r.stripe_status, r.stripe_expires_at
                           FROM reservations r WHERE r.id = l.holder LIMIT 1) r ON true
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
