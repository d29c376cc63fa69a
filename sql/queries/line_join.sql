-- $1 painting id, $2 SHA-256 (hex) of the new line token, $3 visitor hash,
-- $4 claim window in seconds, $5 line maximum, $6 per-visitor maximum.
SELECT outcome, entry_position, line_length,
       paintlock_rfc3339(window_from) AS window_from,
       paintlock_rfc3339(window_until) AS window_until
  FROM paintlock_line_join($1::text, $2::text, $3::text, make_interval(secs => $4::integer),
                           $5::integer, $6::integer)
