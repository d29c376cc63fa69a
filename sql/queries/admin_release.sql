-- $1 reservation id, $2 the state the admin saw, $3 the item fences the admin
-- saw (bigint[], painting id order), $4 reason, $5 actor, $6 forced (skipped
-- Stripe), $7 what Stripe said of the session or NULL.
SELECT outcome, state_now
  FROM paintlock_admin_release($1::uuid, $2::text, $3::bigint[], $4::text, $5::text,
                               $6::boolean, $7::text)
