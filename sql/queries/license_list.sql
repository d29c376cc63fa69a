-- Every licence, newest first, for paintlockctl licenses.
SELECT l.subscription_id, l.customer_id, l.status,
       paintlock_license_active(l.status, l.current_period_end) AS active,
       paintlock_rfc3339(l.current_period_end) AS current_period_end,
       paintlock_rfc3339(l.updated_from_event_created) AS updated_from_event_created,
       l.updated_from_event_id, paintlock_rfc3339(l.created_at) AS created_at, l.key_sha256
  FROM licenses l
 ORDER BY l.created_at DESC, l.subscription_id
