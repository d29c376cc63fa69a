-- $1 painting id, $2 SHA-256 (hex) of a line token: that entry as its holder
-- sees it now (no row: no such entry), with the milliseconds until its window
-- starts and ends by the database clock.
SELECT state, entry_position, line_length,
       coalesce(paintlock_rfc3339(window_from), '') AS window_from,
       coalesce(paintlock_rfc3339(window_until), '') AS window_until,
       CASE WHEN window_from IS NOT NULL
            THEN greatest(0, ceil(extract(epoch FROM (window_from - now())) * 1000))::bigint
       END AS starts_in_ms,
       CASE WHEN window_until IS NOT NULL
            THEN greatest(0, ceil(extract(epoch FROM (window_until - now())) * 1000))::bigint
       END AS ends_in_ms,
       coalesce(reservation_id::text, '') AS reservation_id
  FROM paintlock_line_entry($1::text, $2::text)
