-- Availability changes are published after commit, never inside the writer's
-- transaction.
--
-- A transaction that ran pg_notify takes a database-wide lock at commit and
-- holds it through its WAL flush, so every notifying commit waits for every
-- other: with the per-row triggers of 0004 each reservation queued behind all
-- others. The triggers go. Instead every writer, once its transaction has
-- committed, hands the painting ids it may have changed to
-- locks::AvailabilityPublisher, which sends them in a transaction of its own
-- (sql/queries/availability_publish.sql) with synchronous_commit off: the
-- notify lock is held only for the commit record's write, and a buyer's
-- commit never waits for it.
--
-- What must hold:
--   * The payload is still one painting id; listeners re-read
--     paintlock_availability() for it, so they send the committed truth.
--   * A publish can be lost (a process dies between its commit and its
--     publish, or a crash loses an asynchronous commit). Listeners converge
--     anyway: their periodic full read and their lapse re-reads see every
--     committed change within the full-read interval.
--   * paintlock.availability_notify = off (paintlock_availability_notify())
--     still silences publishing, now in the publisher's statement.
DROP TRIGGER painting_locks_notify_insert ON painting_locks;
DROP TRIGGER painting_locks_notify_update ON painting_locks;
DROP TRIGGER paintings_notify_insert ON paintings;
DROP TRIGGER paintings_notify_update ON paintings;
DROP TRIGGER reservations_notify_state ON reservations;
DROP FUNCTION paintlock_notify_painting_lock();
DROP FUNCTION paintlock_notify_painting();
DROP FUNCTION paintlock_notify_reservation();
