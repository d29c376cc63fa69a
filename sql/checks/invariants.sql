-- the invariants of docs/ARCHITECTURE.md, as far as SQL can see them. Each row is a violation:
-- (invariant, detail). The test harness runs this after every test; an empty
-- result means the database is in a state paintlock promises.
-- An invariant named "(once settled)" holds only when no work is in flight: its
-- state is a legitimate step in between (a refund decided, its Stripe call
-- running or failing until reconcile). Checks taken while the shop runs (the
-- fault campaign's samples) skip those; the checks after settling do not.

-- 1. A painting is never held by two reservations at once...
SELECT '1: painting held by two reservations' AS invariant, i.painting_id AS detail
  FROM reservation_items i
  JOIN reservations r ON r.id = i.reservation_id
 WHERE r.state IN ('held', 'awaiting_payment') AND paintlock_holds_all(r.id)
 GROUP BY i.painting_id HAVING count(*) > 1
UNION ALL
-- ...and never sold to two sessions.
SELECT '1: painting sold twice', i.painting_id
  FROM reservation_items i
  JOIN reservations r ON r.id = i.reservation_id
 WHERE r.state = 'sold'
 GROUP BY i.painting_id HAVING count(*) > 1
UNION ALL
-- 2. A live reservation holds all of its paintings or none of them.
SELECT '2: reservation holds only some of its paintings', r.id::text
  FROM reservations r
 WHERE r.state IN ('held', 'awaiting_payment')
   AND (SELECT count(*) FROM reservation_items i JOIN painting_locks l ON l.painting_id = i.painting_id
         WHERE i.reservation_id = r.id AND l.holder = r.id AND l.fence = i.fence)
       NOT IN (0, (SELECT count(*) FROM reservation_items i WHERE i.reservation_id = r.id))
UNION ALL
-- 3. Nobody is charged without the painting unless refunded: a sale owns its
--    paintings and flags them in the catalogue; no refund is left owed.
SELECT '3: sold reservation without its catalogue flag', r.id::text || ' ' || i.painting_id
  FROM reservations r
  JOIN reservation_items i ON i.reservation_id = r.id
  JOIN paintings p ON p.id = i.painting_id
 WHERE r.state = 'sold' AND p.sold_at IS NULL
UNION ALL
SELECT '3 (once settled): refund decided but not confirmed', r.id::text
  FROM reservations r WHERE r.state = 'refund_pending'
UNION ALL
SELECT '3: refunded without an audit entry', r.id::text
  FROM reservations r
 WHERE r.state = 'refunded'
   AND NOT EXISTS (SELECT 1 FROM audit_log a WHERE a.reservation_id = r.id AND a.action = 'refund')
UNION ALL
-- Structure: every painting has its lock row; a holder names a reservation
-- that reserved that painting.
SELECT 'structure: painting without lock row', p.id
  FROM paintings p WHERE NOT EXISTS (SELECT 1 FROM painting_locks l WHERE l.painting_id = p.id)
UNION ALL
SELECT 'structure: lock held by a reservation that did not reserve it', l.painting_id
  FROM painting_locks l
 WHERE l.holder IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM reservation_items i
                    WHERE i.reservation_id = l.holder AND i.painting_id = l.painting_id);
