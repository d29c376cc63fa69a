-- $1 key, $2 claim id, $3 status, $4 body, $5 location ('': none).
-- Records the answer only while the claim is still the caller's: true if so
-- (a function, to read the key by index: sql/migrations/0025).
SELECT paintlock_idempotency_record($1::text, $2::text, $3::integer, $4::text, $5::text)
  AS recorded
