-- $1 painting ids (text[]), $2 reservation ids (uuid[]): notifies
-- paintlock_availability once for each given painting and each painting of
-- the given reservations, unless paintlock.availability_notify is off
-- (paintlock_availability_publish, sql/migrations/0026: the reservations'
-- paintings read by key). Returns how many were notified.
-- Run after the writer's commit, alone: autocommit, one round trip. The
-- commit does not wait for its WAL flush: set_config(..., true) lasts until
-- this statement's own commit, which is when PostgreSQL reads
-- synchronous_commit. Losing the commit in a crash loses only a publish, which
-- the feeds' re-reads heal; waiting for the flush would hold the notify lock.
SELECT paintlock_availability_publish($1::text[], $2::uuid[]) AS sent
  FROM (SELECT set_config('synchronous_commit', 'off', true)) AS quiet
