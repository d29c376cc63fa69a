-- Idempotency-Key on the server API's POSTs (gateway/idempotency.h): one row
-- per key, naming the one request that key stands for and, once it was
-- answered, the answer to replay.
--
-- Invariants:
--   * A key names one request: its fingerprint (SHA-256 of method, path and
--     raw body, computed by the gateway) never changes. Keys are global to
--     the API key, not scoped by route: the same key on another route has
--     another fingerprint and is refused, never acted on.
--   * At most one claimant acts for a key at a time: a claim is the row in
--     state 'in_progress' with a random claim id; only the claimant whose id
--     is on the row may record or forget it. A claim whose locked_until has
--     passed (its gateway died, or lost the database, mid-request) may be
--     taken over by a retry with the same fingerprint, on the database clock.
--   * A 'done' row never changes again until the sweep deletes it; the sweep
--     deletes only rows created more than 24 hours ago.
CREATE TABLE idempotency_keys (
  key          text PRIMARY KEY CHECK (key ~ '^[ -~]{1,255}$'),
  fingerprint  text NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
  route        text NOT NULL CHECK (length(route) <= 300),  -- "POST /v1/…", for operators
  state        text NOT NULL CHECK (state IN ('in_progress', 'done')),
  claim        text NOT NULL,
  locked_until timestamptz,                                  -- in_progress only
  status       integer CHECK (status BETWEEN 100 AND 599),   -- done only
  body         text CHECK (length(body) <= 65536),
  location     text CHECK (length(location) <= 2048),
  created_at   timestamptz NOT NULL DEFAULT now(),
  finished_at  timestamptz,
  CHECK ((state = 'in_progress') = (locked_until IS NOT NULL)),
  CHECK ((state = 'done') = (status IS NOT NULL AND body IS NOT NULL))
);
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);

-- Claims p_key for the request p_fingerprint, or says why not. Outcomes:
--   'claimed'      the caller acts, then records or forgets with p_claim;
--   'replay'       answered before: status, body, location are the answer;
--   'reused'       the key names another request (another fingerprint);
--   'in_progress'  a live claim by someone else: retry after retry_after_seconds.
-- Each statement takes its own snapshot (plpgsql, READ COMMITTED), so the read
-- after a conflicting insert sees the row that beat it.
CREATE FUNCTION paintlock_idempotency_claim(p_key text, p_fingerprint text, p_route text,
                                            p_claim text, p_lease interval)
RETURNS TABLE (outcome text, status integer, body text, location text,
               retry_after_seconds integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  r idempotency_keys%ROWTYPE;
BEGIN
  -- Twice at most: a row deleted between the insert and the read (a forgotten
  -- claim, the sweep) is claimed on the second pass.
  FOR attempt IN 1..2 LOOP
    INSERT INTO idempotency_keys (key, fingerprint, route, state, claim, locked_until)
    VALUES (p_key, p_fingerprint, p_route, 'in_progress', p_claim, now() + p_lease)
    ON CONFLICT (key) DO NOTHING;
    IF FOUND THEN
      RETURN QUERY SELECT 'claimed'::text, NULL::integer, NULL::text, NULL::text, 0;
      RETURN;
    END IF;
    SELECT * INTO r FROM idempotency_keys k WHERE k.key = p_key FOR UPDATE;
    IF FOUND THEN
      IF r.fingerprint <> p_fingerprint THEN
        RETURN QUERY SELECT 'reused'::text, NULL::integer, NULL::text, NULL::text, 0;
      ELSIF r.state = 'done' THEN
        RETURN QUERY SELECT 'replay'::text, r.status, r.body, r.location, 0;
      ELSIF r.locked_until <= now() THEN
        UPDATE idempotency_keys k
           SET claim = p_claim, locked_until = now() + p_lease, created_at = now()
         WHERE k.key = p_key;
        RETURN QUERY SELECT 'claimed'::text, NULL::integer, NULL::text, NULL::text, 0;
      ELSE
        RETURN QUERY SELECT 'in_progress'::text, NULL::integer, NULL::text, NULL::text, 1;
      END IF;
      RETURN;
    END IF;
  END LOOP;
  RETURN QUERY SELECT 'in_progress'::text, NULL::integer, NULL::text, NULL::text, 1;
END;
$$;
