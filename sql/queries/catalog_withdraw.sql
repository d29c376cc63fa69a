-- $1 painting id, $2 reason, $3 actor.
SELECT outcome, holder, holder_state, paintlock_admin_time(until) AS until
  FROM paintlock_admin_withdraw($1::text, $2::text, $3::text)
