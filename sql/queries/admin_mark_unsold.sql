-- $1 painting id, $2 reason, $3 actor.
SELECT outcome, sale FROM paintlock_admin_mark_unsold($1::text, $2::text, $3::text)
