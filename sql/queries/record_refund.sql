-- $1 reservation id, $2 Stripe refund id, $3 actor.
SELECT paintlock_record_refund($1::uuid, $2::text, $3::text) AS recorded
