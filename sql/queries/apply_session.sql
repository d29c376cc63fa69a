-- $1 event id or NULL, $2 event type (or 'session.retrieved'), $3 session id,
-- $4 reservation id from the session's metadata or NULL, $5 status,
-- $6 payment_status, $7 payment intent or NULL, $8 actor, $9 delayed-payment hold (s).
-- A refund Stripe reported before the sale is settled in the same statement
-- (sql/migrations/0013: paintlock_after_session_apply).
SELECT s.outcome, s.reservation_id, s.payment_intent
  FROM paintlock_apply_session($1::text, $2::text, $3::text, $4::uuid, $5::text, $6::text,
                               $7::text, $8::text, make_interval(secs => $9::integer)) a,
       LATERAL paintlock_after_session_apply(a.outcome, a.reservation_id, a.payment_intent,
                                             $8::text, $1::text) s
