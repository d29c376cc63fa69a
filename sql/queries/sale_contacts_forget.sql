-- $1 session id or NULL, $2 email or NULL (compared case-insensitively),
-- $3 seconds or NULL (details recorded longer ago than that), $4 actor,
-- $5 reason, $6 the selector's name for the audit (session, email,
-- older_than). Blanks the buyer details of every matching sale and marks
-- them forgotten (sql/migrations/0017); a session named by id that has no
-- details yet gets a tombstone, so nothing can record them later. A session
-- id paintlock has never seen (no reservation, audit line or Stripe event:
-- a typo) changes nothing and is not audited: `known` is false. Audited
-- once, by selector and count: never the email or an address.
WITH known AS (
  SELECT $1::text IS NULL
      OR EXISTS (SELECT 1 FROM sale_contacts k WHERE k.session_id = $1::text)
      OR EXISTS (SELECT 1 FROM reservations r WHERE r.stripe_session_id = $1::text)
      OR EXISTS (SELECT 1 FROM audit_log a WHERE a.session_id = $1::text)
      OR EXISTS (SELECT 1 FROM stripe_events e WHERE e.session_id = $1::text) AS known
), chosen AS (
  SELECT k.session_id FROM sale_contacts k
   WHERE k.forgotten_at IS NULL
     AND ($1::text IS NULL OR k.session_id = $1::text)
     AND ($2::text IS NULL OR lower(k.email) = lower($2::text))
     AND ($3::bigint IS NULL OR k.recorded_at < now() - make_interval(secs => $3::bigint))
   ORDER BY k.session_id
   FOR UPDATE
), blanked AS (
  UPDATE sale_contacts k
     SET name = NULL, email = NULL, phone = NULL, shipping_name = NULL, line1 = NULL,
         line2 = NULL, city = NULL, postal_code = NULL, state = NULL, country = NULL,
         forgotten_at = now(), updated_at = now()
    FROM chosen
   WHERE k.session_id = chosen.session_id
  RETURNING k.session_id
), tombstone AS (
  INSERT INTO sale_contacts (session_id, forgotten_at)
  SELECT $1::text, now() FROM known WHERE $1::text IS NOT NULL AND known.known
  ON CONFLICT (session_id) DO NOTHING
  RETURNING session_id
), audited AS (
  INSERT INTO audit_log (actor, action, session_id, reason, details)
  SELECT $4::text, 'contacts_forgotten', $1::text, $5::text,
         jsonb_build_object('selector', $6::text,
                            'sales', (SELECT count(*) FROM blanked),
                            'tombstones', (SELECT count(*) FROM tombstone))
    FROM known WHERE known.known
  RETURNING 1
)
SELECT (SELECT count(*) FROM blanked) AS forgotten,
       (SELECT count(*) FROM tombstone) AS tombstones,
       (SELECT count(*) FROM audited) AS audited,
       (SELECT known FROM known) AS known
