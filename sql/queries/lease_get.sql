-- $1 lease name. A lease whose time has passed is free, whoever it names.
SELECT l.name, l.holder, l.token, paintlock_rfc3339_ms(l.expires_at) AS expires_at,
       coalesce(l.expires_at > now(), false) AS live,
       paintlock_seconds_until(l.expires_at) AS seconds_left,
       paintlock_rfc3339_ms(l.granted_at) AS granted_at,
       floor(extract(epoch FROM l.expires_at - now()))::bigint AS expires_in_seconds
  FROM leases l WHERE l.name = $1::text
