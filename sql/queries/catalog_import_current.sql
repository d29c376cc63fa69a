-- $1 painting id: what the catalogue shows of it now (no row: not in it).
SELECT s.title, s.price_minor, s.currency, s.state FROM painting_states s WHERE s.id = $1
