-- $1 painting id: its catalogue entry, what a buyer sees of it, and its lock row.
SELECT p.id, p.title, p.price_minor, p.currency, s.state, paintlock_admin_time(s.free_at) AS free_at,
       paintlock_admin_time(p.sold_at) AS sold_at, paintlock_admin_time(p.withdrawn_at) AS withdrawn_at,
       p.withdrawn_reason, paintlock_admin_time(p.created_at) AS created_at,
       paintlock_admin_time(p.updated_at) AS updated_at,
       l.holder, h.state AS holder_state, paintlock_admin_time(l.held_until) AS held_until,
       paintlock_admin_time(l.sold_until) AS sold_until, l.fence
  FROM paintings p
  JOIN painting_locks l ON l.painting_id = p.id
  JOIN painting_states s ON s.id = p.id
  LEFT JOIN reservations h ON h.id = l.holder
 WHERE p.id = $1::text
