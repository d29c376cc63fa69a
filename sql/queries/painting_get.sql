-- $1 painting id.
SELECT s.id, s.title, s.price_minor, s.currency, s.state, paintlock_rfc3339(s.free_at) AS free_at,
       paintlock_seconds_until(s.free_at) AS retry_after, p.image_url, p.description
  FROM painting_states s JOIN paintings p ON p.id = s.id WHERE s.id = $1::text
