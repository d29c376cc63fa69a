-- $1 id, $2 title, $3 price in minor units, $4 currency: a new painting.
INSERT INTO paintings (id, title, price_minor, currency) VALUES ($1, $2, $3, $4)
