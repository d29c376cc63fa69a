-- $1 key, $2 claim id: drops a claim whose request changed nothing, so that a
-- retry with the same key acts. True if the claim was the caller's (a
-- function, to read the key by index: sql/migrations/0025).
SELECT paintlock_idempotency_forget($1::text, $2::text) AS forgotten
