-- $1 the id to start after (NULL: from the first), $2 how many to return at
-- most. Keyset pagination in id order: returns up to $2 + 1 paintings after $1
-- (the extra one only tells the caller there is more), and always at least one
-- row whose `cursor_known` says whether $1 names a painting; a row with a NULL
-- id carries only that.
SELECT k.cursor_known, s.id, s.title, s.price_minor, s.currency, s.state,
       paintlock_rfc3339(s.free_at) AS free_at, paintlock_seconds_until(s.free_at) AS retry_after,
       p.image_url, p.description
  FROM (SELECT $1::text IS NULL OR EXISTS (SELECT 1 FROM paintings p WHERE p.id = $1::text)
                 AS cursor_known) k
  LEFT JOIN LATERAL (
    SELECT * FROM painting_states v
     WHERE k.cursor_known AND ($1::text IS NULL OR v.id > $1::text)
     ORDER BY v.id
     LIMIT $2::integer + 1) s ON true
  LEFT JOIN paintings p ON p.id = s.id
 ORDER BY s.id
