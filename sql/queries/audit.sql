-- $1 actor, $2 action, $3 reservation, $4 painting, $5 session, $6 reason, $7 details (json text).
SELECT paintlock_audit($1::text, $2::text, $3::uuid, $4::text, $5::text, $6::text, $7::jsonb)
