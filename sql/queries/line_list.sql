-- $1 painting id: its line for an operator — every entry still waiting (with
-- its computed state, position and window) and the last 50 that stopped
-- waiting, in order of joining. Visitors are shown by a prefix of their hash.
WITH chain AS (SELECT * FROM paintlock_line_chain($1::text) WHERE window_until > now()),
     recent AS (SELECT e.id FROM line_entries e
                 WHERE e.painting_id = $1::text AND e.state <> 'waiting'
                 ORDER BY e.id DESC LIMIT 50)
SELECT e.id AS entry_id,
       CASE
         WHEN e.state <> 'waiting' THEN e.state
         WHEN paintlock_painting_sold($1::text) THEN 'closed'
         WHEN c.entry_id IS NULL THEN 'passed'
         WHEN c.window_from <= now() THEN 'your_turn'
         ELSE 'waiting'
       END AS state,
       (SELECT count(*) FROM chain k WHERE k.rank <= c.rank) AS entry_position,
       left(e.visitor, 8) AS visitor,
       paintlock_rfc3339(e.joined_at) AS joined_at,
       coalesce(paintlock_rfc3339(c.window_from), '') AS window_from,
       coalesce(paintlock_rfc3339(c.window_until), '') AS window_until,
       coalesce(e.ended_reason, '') AS ended_reason,
       coalesce(e.reservation_id::text, '') AS reservation_id
  FROM line_entries e
  LEFT JOIN chain c ON c.entry_id = e.id
 WHERE e.painting_id = $1::text AND (e.state = 'waiting' OR e.id IN (SELECT id FROM recent))
 ORDER BY e.id
