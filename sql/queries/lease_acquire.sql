-- $1 lease name, $2 holder, $3 TTL (s).
SELECT granted, holder, token, paintlock_rfc3339_ms(expires_at) AS expires_at,
       coalesce(expires_at > now(), false) AS live,
       paintlock_seconds_until(expires_at) AS seconds_left
  FROM paintlock_lease_acquire($1::text, $2::text, make_interval(secs => $3::integer))
