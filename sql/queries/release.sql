-- $1 reservation id, $2 reason, $3 actor. The state afterwards, NULL if unknown.
SELECT paintlock_release($1::uuid, $2::text, $3::text) AS state
