-- $1 painting id, $2 reason, $3 actor. Entries closed; NULL for an unknown painting.
SELECT paintlock_line_clear($1::text, $2::text, $3::text) AS closed
