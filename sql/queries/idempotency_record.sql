-- $1 key, $2 claim id, $3 status, $4 body, $5 location ('': none).
-- Records the answer only while the claim is still the caller's.
UPDATE idempotency_keys
   SET state = 'done', status = $3::integer, body = $4::text, location = NULLIF($5::text, ''),
       locked_until = NULL, finished_at = now()
 WHERE key = $1::text AND claim = $2::text AND state = 'in_progress'
