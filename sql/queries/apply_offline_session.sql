-- $1..$9 as apply_session.sql; $10 the offline cart's painting ids (text[]),
-- $11 their prices in minor units (bigint[], same order), $12 the currency.
-- A refund Stripe reported before the sale is settled in the same statement
-- (sql/migrations/0013: paintlock_after_session_apply).
SELECT s.outcome, s.reservation_id, s.payment_intent
  FROM paintlock_apply_offline_session($1::text, $2::text, $3::text, $4::uuid, $5::text,
                                       $6::text, $7::text, $8::text,
                                       make_interval(secs => $9::integer), $10::text[],
                                       $11::bigint[], $12::text) a,
       LATERAL paintlock_after_session_apply(a.outcome, a.reservation_id, a.payment_intent,
                                             $8::text, $1::text) s
