-- $1 id, $2 title, $3 price in minor units, $4 currency: a painting's new entry.
UPDATE paintings SET title = $2, price_minor = $3, currency = $4, updated_at = now()
 WHERE id = $1
