-- $1 painting id, $2 SHA-256 (hex) of a line token.
SELECT outcome, coalesce(state, '') AS state FROM paintlock_line_leave($1::text, $2::text)
