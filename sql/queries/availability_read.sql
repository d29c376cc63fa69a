-- $1 painting ids (text[]) or NULL for every painting: what the availability
-- streams show of them, with the milliseconds until a hold lapses.
SELECT id, state, coalesce(free_at, '') AS free_at, free_in_ms
  FROM paintlock_availability($1::text[])
