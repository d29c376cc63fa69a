-- $1 painting id or NULL, $2 reservation ids (uuid[]), $3 Stripe session ids
-- (text[]): the audit entries that name any of them, in time order.
SELECT a.id, paintlock_admin_time(a.at) AS at, a.actor, a.action, a.reservation_id,
       a.painting_id, a.session_id, a.reason, a.details::text AS details
  FROM audit_log a
 WHERE a.painting_id = $1::text
    OR a.reservation_id = ANY ($2::uuid[])
    OR a.session_id = ANY ($3::text[])
 ORDER BY a.at, a.id
