-- $1 age bound in seconds, $2 batch size: deletes one batch of keys created
-- longer ago than the bound (the caller never passes less than 24 hours).
-- Returns how many.
WITH old AS (
  SELECT key FROM idempotency_keys
   WHERE created_at < now() - make_interval(secs => $1::bigint)
   LIMIT $2::integer
   FOR UPDATE SKIP LOCKED
), gone AS (
  DELETE FROM idempotency_keys k USING old WHERE k.key = old.key RETURNING 1
)
SELECT count(*) AS deleted FROM gone
