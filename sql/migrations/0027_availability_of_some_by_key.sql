-- The availability listener's read of a few paintings (those notified or
-- lapsing since its last read, sql/queries/availability_read_some.sql)
-- planned once per connection and read by key.
--
-- The listener read them with paintlock_availability(ids) as an unnamed
-- statement, planned for each read: a generic plan of "p_ids IS NULL OR
-- s.id = ANY (p_ids)" can only scan the catalogue, which a burst of large
-- reads once taught PostgreSQL to keep (locks/availability_feed.cc). Planning
-- the view, its line chain and the line's JSON took about as long as running
-- it. Measured on 20,000 paintings, 3,000 of them held, reading 280 of them
-- (what a read interval of make bench's reserves brings): planned each time,
-- 3.8 ms of planning and 5.1 ms of execution (a hash join over sequential
-- scans of paintings and painting_locks); this function's plan, made once,
-- 3.0 ms, every painting and lock read through its primary key. In make
-- bench the listener's backend spent 97 µs of CPU a reserve, about what the
-- gateway itself spent.
--
-- The rows both read are now one view, painting_availability; the full read
-- (NULL ids) keeps paintlock_availability(), planned for each read: it runs
-- every full_read_interval and is a scan of the catalogue anyway.
-- enable_seqscan = off holds the new function's plan to the keys whatever the
-- statistics said when it was made (a line_entries analysed empty before a
-- drop's line formed, say).

-- What the availability streams show of each painting: its state, when it is
-- free again and in how many milliseconds, how many wait in its line and (for
-- the streams of line members) the line itself as JSON (0010).
CREATE VIEW painting_availability AS
SELECT s.id, s.state, paintlock_rfc3339(s.free_at) AS free_at,
       CASE WHEN s.free_at IS NOT NULL
            THEN greatest(1, ceil(extract(epoch FROM (s.free_at - now())) * 1000))::bigint
       END AS free_in_ms,
       s.line_length,
       CASE WHEN s.line_length > 0 THEN
         (SELECT json_agg(json_build_array(c.token_sha256, c.window_from <= now(),
                                           paintlock_rfc3339(c.window_from),
                                           paintlock_rfc3339(c.window_until))
                          ORDER BY c.rank)::text
            FROM paintlock_line_chain(s.id) c
           WHERE c.window_until > now())
       END AS line
  FROM painting_states s;

CREATE OR REPLACE FUNCTION paintlock_availability(p_ids text[])
RETURNS TABLE (id text, state text, free_at text, free_in_ms bigint, line_length bigint,
               line text)
LANGUAGE sql STABLE AS $$
  SELECT a.id, a.state, a.free_at, a.free_in_ms, a.line_length, a.line
    FROM painting_availability a
   WHERE p_ids IS NULL OR a.id = ANY (p_ids)
   ORDER BY a.id;
$$;

CREATE FUNCTION paintlock_availability_of(p_ids text[])
RETURNS TABLE (id text, state text, free_at text, free_in_ms bigint, line_length bigint,
               line text)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
BEGIN
  RETURN QUERY
  SELECT a.id, a.state, a.free_at, a.free_in_ms, a.line_length, a.line
    FROM painting_availability a
   WHERE a.id = ANY (p_ids)
   ORDER BY a.id;
END;
$$;
