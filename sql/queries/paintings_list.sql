SELECT id, title, price_minor, currency, state, paintlock_rfc3339(free_at) AS free_at,
       paintlock_seconds_until(free_at) AS retry_after
  FROM painting_states ORDER BY id
