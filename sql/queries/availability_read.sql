-- $1 painting ids (text[]) or NULL for every painting: what the availability
-- streams show of them, with the milliseconds until a hold or a line's
-- claim window ends, how many wait in each painting's line, and (for the
-- streams of line members) the line itself, as JSON (sql/migrations/0010).
SELECT id, state, coalesce(free_at, '') AS free_at, free_in_ms, line_length, line
  FROM paintlock_availability($1::text[])
