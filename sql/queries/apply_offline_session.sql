-- $1..$9 as apply_session.sql; $10 the offline cart's painting ids (text[]),
-- $11 their prices in minor units (bigint[], same order), $12 the currency.
SELECT outcome, reservation_id, payment_intent
  FROM paintlock_apply_offline_session($1::text, $2::text, $3::text, $4::uuid, $5::text,
                                       $6::text, $7::text, $8::text,
                                       make_interval(secs => $9::integer), $10::text[],
                                       $11::bigint[], $12::text)
