-- $1 key, $2 claim id: drops a claim whose request changed nothing, so that a
-- retry with the same key acts.
DELETE FROM idempotency_keys WHERE key = $1::text AND claim = $2::text AND state = 'in_progress'
