\set k random(1, :paintings)
SELECT outcome, painting_id, reservation_id, stripe_session_id, line_position,        paintlock_rfc3339(until) AS until, paintlock_seconds_until(until) AS seconds_until   FROM paintlock_reserve_on_sale(ARRAY['bench-' || :k]::text[], make_interval(secs => :hold), NULL::text, gen_random_uuid(),                                  NULL::text) ;
