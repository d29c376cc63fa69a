-- $1 age bound in seconds: how many keys the sweep would delete.
SELECT count(*) AS keys FROM idempotency_keys
 WHERE created_at < now() - make_interval(secs => $1::bigint)
