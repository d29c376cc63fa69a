-- $1 id, $2 title, $3 price in minor units, $4 currency, $5 image URL or NULL,
-- $6 description or NULL: a new painting.
INSERT INTO paintings (id, title, price_minor, currency, image_url, description)
VALUES ($1, $2, $3, $4, $5, $6)
