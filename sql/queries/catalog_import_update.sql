-- $1 id, $2 title, $3 price in minor units, $4 currency, $5 image URL or NULL,
-- $6 description or NULL: a painting's new entry.
UPDATE paintings
   SET title = $2, price_minor = $3, currency = $4, image_url = $5, description = $6,
       updated_at = now()
 WHERE id = $1
