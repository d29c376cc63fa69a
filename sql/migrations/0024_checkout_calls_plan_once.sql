-- A checkout's other calls read reservations by key whatever the statistics
-- said when their connection planned them: attaching the Stripe session,
-- applying its webhook, and releasing a hold.
--
-- These three ran with the default plan_cache_mode. After five calls a
-- connection keeps a generic plan; made while `reservations` was small (a shop
-- whose first few dozen test orders autovacuum had analysed, then a launch),
-- it reads reservations by sequential scan, and keeps doing so as the table
-- grows, until autovacuum next analyses it. Measured on one connection that
-- planned them on an empty table, after 2,000 holds arrived unanalysed: an
-- attach scanned reservations once, a completed-session webhook four times
-- (and reservation_items twice), a release three times. With the settings of
-- the reserve (0020), the credit functions (0021) and paintlock_unhold (0022):
-- none, each row read through its primary key (2–7 index entries a call).
-- The settings hold for the functions these call too.
--
-- enable_seqscan = off does not forbid a walk over a whole index (0023), so
-- tests/reservations_test.cc counts both kinds of read, for the paths it
-- takes (a session attached, completed and paid; a hold released).

ALTER FUNCTION paintlock_attach_session(uuid, text, timestamptz)
  SET plan_cache_mode = force_generic_plan SET enable_seqscan = off;
ALTER FUNCTION paintlock_release(uuid, text, text)
  SET plan_cache_mode = force_generic_plan SET enable_seqscan = off;
ALTER FUNCTION paintlock_apply_session(text, text, text, uuid, text, text, text, text, interval)
  SET plan_cache_mode = force_generic_plan SET enable_seqscan = off;
