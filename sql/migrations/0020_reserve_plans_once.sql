-- The reserve plans its statements once per connection, and never onto a
-- sequential scan.
--
-- PL/pgSQL re-planned every statement of paintlock_reserve and
-- paintlock_reserve_on_sale on every call: with the cart as an array
-- parameter, each statement's generic plan estimates ten paintings, costs
-- more than a custom plan for the usual one, and so plan_cache_mode = auto
-- kept planning afresh. `perf record` over pgbench on reserve.sql put 42% of
-- all samples in standard_planner.
--
-- plan_cache_mode = force_generic_plan alone was slower in the bench (1,013
-- and 900 tps against 1,765 and 1,649 with auto): a generic plan is kept, and
-- one made while `reservations` was empty (a new shop, or the bench after its
-- reset) hash-joined or checked foreign keys by sequential scan over every
-- reservation, long after the table had grown (auto_explain: 861 foreign-key
-- checks and 744 conflict reads by sequential scan in 8 s). Every statement
-- here reads a handful of rows by key, so enable_seqscan = off makes the
-- index the only plan at any table size; it holds for what runs inside the
-- two functions (their foreign-key checks included) and nowhere else.
--
-- pgbench on reserve.sql, 32 clients, 10 s, publishing off, alternating with
-- auto: from empty tables 2,431 and 2,242 tps against 1,901 and 1,770; with
-- the previous run's rows 2,745 and 3,781 against 1,920 and 1,729.
--
-- CREATE OR REPLACE FUNCTION drops these settings: a later migration that
-- restates either function restates them too (tests/reservations_test.cc
-- checks the behaviour).

ALTER FUNCTION paintlock_reserve(text[], interval, text, uuid, text)
  SET plan_cache_mode = force_generic_plan SET enable_seqscan = off;
ALTER FUNCTION paintlock_reserve_on_sale(text[], interval, text, uuid, text)
  SET plan_cache_mode = force_generic_plan SET enable_seqscan = off;
