-- $1 quota, $2 subject, $3 time zone. Today's count, without counting; the
-- stored row's day and last counted request, for paintlockctl.
SELECT CASE WHEN s.day = t.day THEN s.used ELSE 0 END AS used,
       paintlock_rfc3339(paintlock_quota_resets_at(t.day, $3::text)) AS resets_at,
       paintlock_seconds_until(paintlock_quota_resets_at(t.day, $3::text)) AS retry_after,
       t.day::text AS today,
       s.day::text AS stored_day,
       s.used AS stored_used,
       paintlock_rfc3339(s.last_at) AS last_at
  FROM (SELECT (now() AT TIME ZONE $3::text)::date AS day) t
  LEFT JOIN quota_usage s ON s.quota = $1::text AND s.subject = $2::text
