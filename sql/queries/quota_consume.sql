-- $1 quota, $2 subject, $3 daily limit, $4 time zone (an IANA name).
-- One decision in one statement: the guarded upsert checks and counts
-- together under the row's lock, and resets the count when the day (in the
-- quota's time zone, from the database clock) has changed. A refused request
-- updates nothing, so `decided` is empty and the count is read instead; the
-- refusal itself proves today's count has reached the limit, which covers a
-- snapshot that predates the concurrent requests that filled it.
WITH today AS (
  SELECT (now() AT TIME ZONE $4::text)::date AS day
), decided AS (
  INSERT INTO quota_usage AS u (quota, subject, day, used)
  SELECT $1::text, $2::text, t.day, 1 FROM today t WHERE $3::integer > 0
  ON CONFLICT (quota, subject) DO UPDATE
     SET used = CASE WHEN u.day = EXCLUDED.day THEN u.used + 1 ELSE 1 END,
         day = EXCLUDED.day,
         last_at = now()
   WHERE u.day <> EXCLUDED.day OR u.used < $3::integer
  RETURNING u.used
)
SELECT d.used IS NOT NULL AS allowed,
       coalesce(d.used,
                greatest($3::integer, (SELECT s.used FROM quota_usage s
                                        WHERE s.quota = $1::text AND s.subject = $2::text
                                          AND s.day = t.day))) AS used,
       paintlock_rfc3339(paintlock_quota_resets_at(t.day, $4::text)) AS resets_at,
       paintlock_seconds_until(paintlock_quota_resets_at(t.day, $4::text)) AS retry_after
  FROM today t LEFT JOIN decided d ON true
