-- $1 painting ids (text[]), $2 hold in seconds, $3 buyer reference or NULL,
-- $4 the new reservation's id (uuid) or NULL for one the database picks,
-- $5 the SHA-256 (hex) of the buyer's line token or NULL. Withdrawn paintings
-- are refused by the gate (sql/migrations/0012).
SELECT outcome, painting_id, reservation_id, stripe_session_id, line_position,
       paintlock_rfc3339(until) AS until, paintlock_seconds_until(until) AS seconds_until
  FROM paintlock_reserve_on_sale($1::text[], make_interval(secs => $2::integer), $3::text, $4::uuid,
                                 $5::text)
