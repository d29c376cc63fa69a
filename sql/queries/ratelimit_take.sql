-- $1 key ("bucket:subject"), $2 cost (whole tokens, at most the capacity),
-- $3 capacity, $4 refill per second (> 0).
-- The decision is this one statement: ON CONFLICT locks the bucket's row, so
-- takers on any number of gateways decide one after the other, on the
-- database clock. A new key starts with a full bucket.
INSERT INTO rate_limit_buckets AS b (key, tokens, refreshed_at, last_allowed)
VALUES ($1::text, $3::numeric - $2::integer, now(), true)
ON CONFLICT (key) DO UPDATE
   SET tokens = paintlock_bucket_level(b.tokens, b.refreshed_at, $3::numeric, $4::numeric)
                - CASE WHEN paintlock_bucket_level(b.tokens, b.refreshed_at, $3::numeric, $4::numeric)
                            >= $2::integer
                       THEN $2::integer ELSE 0 END,
       refreshed_at = greatest(b.refreshed_at, now()),
       last_allowed = paintlock_bucket_level(b.tokens, b.refreshed_at, $3::numeric, $4::numeric)
                      >= $2::integer
RETURNING last_allowed AS allowed, floor(tokens)::bigint AS remaining,
          CASE WHEN NOT last_allowed
               THEN greatest(1, ceil(($2::integer - tokens) / $4::numeric))::bigint END AS retry_after
