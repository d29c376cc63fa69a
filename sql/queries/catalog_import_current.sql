-- $1 painting id: what the catalogue shows of it now (no row: not in it).
SELECT s.title, s.price_minor, s.currency, s.state, p.image_url, p.description
  FROM painting_states s JOIN paintings p ON p.id = s.id
 WHERE s.id = $1
