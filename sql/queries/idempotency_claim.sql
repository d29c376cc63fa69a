-- $1 key, $2 fingerprint (64 hex), $3 route, $4 claim id, $5 claim lease (s).
SELECT outcome, status, body, location, retry_after_seconds
  FROM paintlock_idempotency_claim($1::text, $2::text, $3::text, $4::text,
                                   make_interval(secs => $5::integer))
