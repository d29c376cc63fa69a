-- $1 time zone names (text[]). Those the database does not know by that
-- exact name; checked once at start-up so a typo stops the gateway there.
SELECT z.name
  FROM unnest($1::text[]) AS z (name)
 WHERE NOT EXISTS (SELECT 1 FROM pg_timezone_names n WHERE n.name = z.name)
