-- $1 event id, $2 event type, $3 the event's created (unix s), $4 dispute id,
-- $5 charge id or NULL, $6 payment intent, $7 amount, $8 currency, $9 reason,
-- $10 status, $11 actor (sql/migrations/0013: paintlock_apply_dispute).
SELECT outcome, reservation_id, session_id
  FROM paintlock_apply_dispute($1::text, $2::text, $3::bigint, $4::text, $5::text, $6::text,
                               $7::bigint, $8::text, $9::text, $10::text, $11::text)
