-- The credit functions plan their statements once per connection, and never
-- onto a sequential scan: what 0020 did for the reserve.
--
-- With plan_cache_mode = auto a connection keeps a generic plan for each
-- statement of paintlock_credit_commit (and hold, release), re-made after
-- every invalidation of credit_holds (an ANALYZE, a VACUUM). Re-made while the
-- table is nearly empty — a new shop, a shop whose holds were just swept, the
-- bench after its reset — "WHERE h.id = p_hold" becomes a sequential scan, and
-- it stays one while the table grows until the next autovacuum. auto_explain
-- on `make bench` (credit hold + commit, 3 rounds, 2026-12-05): in the second
-- and third rounds every slow commit was
--     Update on credit_holds h -> Seq Scan on credit_holds h  Filter: (id = $1)
-- and the gateway fell from 2,303 to 1,255 and 1,323 iterations/s (p99 25 →
-- 57 ms), while pgbench's fresh connections planned afresh and did not.
--
-- Every statement in these functions reads rows by key (the hold's id, the
-- account's id, an account's open holds through credit_holds_open), so
-- enable_seqscan = off makes the index the only plan at any table size, and
-- force_generic_plan plans each statement once per connection.
-- paintlock_credit_held was force_custom_plan for the same hazard (0006): it
-- now plans once too, its partial index being the only plan.
--
-- CREATE OR REPLACE FUNCTION drops these settings: a later migration that
-- restates one of these functions restates them too (tests/credits_test.cc
-- checks them).

ALTER FUNCTION paintlock_credit_held(text)
  SET plan_cache_mode = force_generic_plan SET enable_seqscan = off;
ALTER FUNCTION paintlock_credit_hold(text, bigint, interval)
  SET plan_cache_mode = force_generic_plan SET enable_seqscan = off;
ALTER FUNCTION paintlock_credit_commit(uuid)
  SET plan_cache_mode = force_generic_plan SET enable_seqscan = off;
ALTER FUNCTION paintlock_credit_release(uuid)
  SET plan_cache_mode = force_generic_plan SET enable_seqscan = off;
