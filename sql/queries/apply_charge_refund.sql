-- $1 event id, $2 event type, $3 charge id, $4 payment intent, $5 the charge's
-- amount, $6 amount refunded so far, $7 currency, $8 refunded in full, $9 actor
-- (sql/migrations/0013: paintlock_apply_charge_refund).
SELECT outcome, reservation_id, session_id
  FROM paintlock_apply_charge_refund($1::text, $2::text, $3::text, $4::text, $5::bigint,
                                     $6::bigint, $7::text, $8::boolean, $9::text)
