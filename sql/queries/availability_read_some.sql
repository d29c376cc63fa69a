-- $1 painting ids (text[], not NULL): what the availability streams show of
-- them, as sql/queries/availability_read.sql, read by key with a plan made
-- once per connection (sql/migrations/0027).
SELECT id, state, coalesce(free_at, '') AS free_at, free_in_ms, line_length, line
  FROM paintlock_availability_of($1::text[])
