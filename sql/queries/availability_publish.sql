-- $1 painting ids (text[]), $2 reservation ids (uuid[]): notifies
-- paintlock_availability once for each given painting and each painting of
-- the given reservations, unless paintlock.availability_notify is off.
-- Run after the writer's commit, in a transaction of its own.
SELECT count(pg_notify('paintlock_availability', changed.id))
  FROM (SELECT unnest($1::text[]) AS id
        UNION
        SELECT i.painting_id FROM reservation_items i WHERE i.reservation_id = ANY ($2::uuid[])
       ) AS changed
 WHERE paintlock_availability_notify()
