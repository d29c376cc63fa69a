-- $1 event id, $2 event type, $3 event created (unix seconds), $4 subscription
-- id, $5 customer id, $6 status, $7 current period end (unix seconds) or NULL,
-- $8 SHA-256 of the licence key derived for the subscription.
SELECT outcome, status
  FROM paintlock_apply_subscription($1::text, $2::text, to_timestamp($3::bigint), $4::text,
                                    $5::text, $6::text, to_timestamp($7::bigint), $8::text)
