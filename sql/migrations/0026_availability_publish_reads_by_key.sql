-- The availability publish (sql/queries/availability_publish.sql) reads the
-- paintings of the reservations it is given by key, whatever the statistics
-- said when its connection planned it.
--
-- The publish runs after every writer's commit, up to once per 20 ms a
-- gateway (locks/availability_publisher.h). As a named statement it kept a
-- generic plan after five calls; made while reservation_items was analysed
-- (nearly) empty (a new shop, or make bench after its reset), that plan read
-- reservation_items by sequential scan, "Filter: (reservation_id = ANY ($2))",
-- and kept doing so as the table grew, until autovacuum next analysed it.
-- Measured on one connection that planned it on an empty table, after 20,000
-- items arrived: 1.0–1.4 ms a publish, each reading every item, even when no
-- reservation was given. With the settings of the reserve (0020) and the
-- checkout's other calls (0024), the items of each given reservation are read
-- through reservation_items_pkey, whose first column is the reservation.
--
-- A statement sent by the gateway cannot carry settings of its own, so the
-- read and the notifications move into a function that does. The statement
-- keeps what must stay its own: synchronous_commit = off for its transaction.
-- tests/reservations_test.cc counts the scans.

CREATE FUNCTION paintlock_availability_publish(p_paintings text[], p_reservations uuid[])
RETURNS bigint
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
DECLARE
  v_sent bigint;
BEGIN
  IF NOT paintlock_availability_notify() THEN
    RETURN 0;
  END IF;
  SELECT count(pg_notify('paintlock_availability', changed.id)) INTO v_sent
    FROM (SELECT unnest(p_paintings) AS id
          UNION
          SELECT i.painting_id FROM reservation_items i
           WHERE i.reservation_id = ANY (p_reservations)) AS changed;
  RETURN v_sent;
END;
$$;
