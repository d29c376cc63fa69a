-- $1 SHA-256 of a licence key (hex). Whether it lifts quotas now.
SELECT l.subscription_id, l.customer_id, l.status,
       paintlock_rfc3339(l.current_period_end) AS current_period_end,
       paintlock_license_active(l.status, l.current_period_end) AS active
  FROM licenses l WHERE l.key_sha256 = $1::text
