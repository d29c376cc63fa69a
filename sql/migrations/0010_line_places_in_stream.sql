-- 0010: the availability stream tells each line member its own place.
--
-- paintlock_availability() gains `line`: the painting's waiting entries
-- whose windows have not ended, in order (position 1 first), as a JSON array
-- of [token_sha256, your_turn, window_from, window_until] (the window's ends
-- in RFC 3339; your_turn by the database clock at the read). NULL while no
-- one waits or the painting is sold. Each gateway sends a stream only the
-- entries of the tokens it was opened with, so the digests never leave the
-- gateway and a member learns nothing of the others but the line's length.
--
-- The feed re-reads a painting when its free_at comes due, and free_at is the
-- end of the hold or of the running turn, so a read lands on every handover:
-- no job is needed for a stream to tell the next member that it is its turn.

DROP FUNCTION paintlock_availability(text[]);
CREATE FUNCTION paintlock_availability(p_ids text[])
RETURNS TABLE (id text, state text, free_at text, free_in_ms bigint, line_length bigint,
               line text)
LANGUAGE sql STABLE AS $$
  SELECT s.id, s.state, paintlock_rfc3339(s.free_at),
         CASE WHEN s.free_at IS NOT NULL
              THEN greatest(1, ceil(extract(epoch FROM (s.free_at - now())) * 1000))::bigint
         END,
         s.line_length,
         CASE WHEN s.line_length > 0 THEN
           (SELECT json_agg(json_build_array(c.token_sha256, c.window_from <= now(),
                                             paintlock_rfc3339(c.window_from),
                                             paintlock_rfc3339(c.window_until))
                            ORDER BY c.rank)::text
              FROM paintlock_line_chain(s.id) c
             WHERE c.window_until > now())
         END
    FROM painting_states s
   WHERE p_ids IS NULL OR s.id = ANY (p_ids)
   ORDER BY s.id;
$$;
