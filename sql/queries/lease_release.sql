-- $1 lease name, $2 holder, $3 fencing token.
SELECT outcome, holder, token, paintlock_rfc3339_ms(expires_at) AS expires_at,
       coalesce(expires_at > now(), false) AS live,
       paintlock_seconds_until(expires_at) AS seconds_left
  FROM paintlock_lease_release($1::text, $2::text, $3::bigint)
