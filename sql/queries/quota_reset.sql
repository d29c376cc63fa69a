-- $1 quota, $2 subject, $3 time zone, $4 actor, $5 reason or NULL.
-- Forgets the subject's count (an admin action: audited when there was one).
-- Returns how many requests had been counted today.
WITH gone AS (
  DELETE FROM quota_usage u WHERE u.quota = $1::text AND u.subject = $2::text
  RETURNING u.used, u.day
), audited AS (
  INSERT INTO audit_log (actor, action, reason, details)
  SELECT $4::text, 'quota_reset', $5::text,
         jsonb_build_object('quota', $1::text, 'subject', $2::text, 'day', g.day, 'used', g.used)
    FROM gone g
  RETURNING 1
)
SELECT coalesce((SELECT g.used FROM gone g
                  WHERE g.day = (now() AT TIME ZONE $3::text)::date), 0) AS used_today,
       (SELECT count(*) FROM audited) > 0 AS existed
