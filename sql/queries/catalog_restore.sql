-- $1 painting id, $2 reason, $3 actor.
SELECT outcome FROM paintlock_admin_restore($1::text, $2::text, $3::text)
