-- Credit holds, rate limits and leases (DESIGN.md: the other "one named owner
-- of a piece of shared state" primitives; locks/CREDITS.md for the API).
--
-- Invariants the functions below keep:
--   * A credit_accounts row is the single owner of its balance and of the
--     right to open or close its holds. Every path that creates, commits or
--     releases a hold, or moves the balance, locks the account row first
--     (SELECT … FOR UPDATE) and only then the hold row, so two paths never
--     deadlock and never decide on a stale sum.
--   * available = balance − the amounts of the account's live holds (state
--     'held' and expires_at > now()). It is computed on every read by
--     paintlock_credit_held, never stored: a hold stops counting the instant
--     its TTL passes, whether or not the sweep ran. A hold is granted only
--     when available ≥ its amount, and a late commit only when available ≥
--     its amount, so available never goes below zero.
--   * A hold moves the balance at most once: only the held → committed
--     transition moves it, and it happens under the account lock. A committed
--     hold is never released; a released hold is never committed.
--   * The sweep only rewrites 'held' rows whose time has passed as 'expired':
--     no answer any function gives depends on whether it ran.
--   * A rate-limit bucket is one row decided by one INSERT … ON CONFLICT DO
--     UPDATE: the row lock serialises every taker, across any number of
--     gateways, on the database clock.
--   * A lease row is never deleted, so its fencing token only ever grows: each
--     grant sets token = previous token + 1 in the same statement that decides.

-- Whole-millisecond RFC 3339 in UTC, truncated (never later than the truth):
-- a holder told "valid until" must not act a fraction of a second too long.
CREATE FUNCTION paintlock_rfc3339_ms(t timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
$$;

-- ---------------------------------------------------------------- credits --

CREATE TABLE credit_accounts (
  id         text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$'),
  balance    bigint NOT NULL CHECK (balance >= 0),  -- whole credits
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE credit_holds (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id    text NOT NULL REFERENCES credit_accounts (id),
  amount        bigint NOT NULL CHECK (amount > 0),
  -- 'held' rows past expires_at no longer count; the sweep renames them 'expired'.
  state         text NOT NULL DEFAULT 'held'
                CHECK (state IN ('held', 'committed', 'released', 'expired')),
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  closed_at     timestamptz,  -- committed, released or swept
  late          boolean,      -- committed after expires_at (the credits were still free)
  balance_after bigint,       -- the account's balance right after the commit
  CHECK ((state = 'committed') = (balance_after IS NOT NULL))
);
-- What every balance read sums: the open holds of one account.
CREATE INDEX credit_holds_open ON credit_holds (account_id, expires_at) WHERE state = 'held';
-- What the sweep looks for.
CREATE INDEX credit_holds_expiry ON credit_holds (expires_at) WHERE state = 'held';

-- Top-ups, keyed by the caller's Idempotency-Key (scoped to the account).
CREATE TABLE credit_topups (
  account_id      text NOT NULL REFERENCES credit_accounts (id),
  idempotency_key text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
  amount          bigint NOT NULL CHECK (amount > 0),
  balance_after   bigint NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, idempotency_key)
);

-- The credits an account's live holds take: the sum every read subtracts.
--
-- plan_cache_mode = force_custom_plan (DESIGN.md, "Database hygiene"): a plan
-- cached while credit_holds was empty is a sequential scan, and it would stay
-- cached for the connection's life; a custom plan sees the account id.
CREATE FUNCTION paintlock_credit_held(p_account text) RETURNS bigint
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_custom_plan AS $$
DECLARE
  v_held bigint;
BEGIN
  SELECT coalesce(sum(h.amount), 0)::bigint INTO v_held
    FROM credit_holds h
   WHERE h.account_id = p_account AND h.state = 'held' AND h.expires_at > now();
  RETURN v_held;
END;
$$;

-- Opens a hold of p_amount on p_account for p_ttl, if the credits are free.
-- Outcomes: 'held' (hold_id, expires_at, available afterwards),
-- 'insufficient' (available), 'unknown_account'.
CREATE FUNCTION paintlock_credit_hold(p_account text, p_amount bigint, p_ttl interval)
RETURNS TABLE (outcome text, hold_id uuid, expires_at timestamptz, available bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_balance bigint;
  v_available bigint;
BEGIN
  -- The account row is the lock: two concurrent holds decide one after the other.
  SELECT a.balance INTO v_balance FROM credit_accounts a WHERE a.id = p_account FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'unknown_account'::text, NULL::uuid, NULL::timestamptz, NULL::bigint;
    RETURN;
  END IF;
  v_available := v_balance - paintlock_credit_held(p_account);
  IF v_available < p_amount THEN
    RETURN QUERY SELECT 'insufficient'::text, NULL::uuid, NULL::timestamptz, v_available;
    RETURN;
  END IF;
  RETURN QUERY
    INSERT INTO credit_holds AS h (account_id, amount, expires_at)
    VALUES (p_account, p_amount, now() + p_ttl)
    RETURNING 'held'::text, h.id, h.expires_at, v_available - p_amount;
END;
$$;

-- Commits a hold: moves the balance once. Idempotent.
-- Outcomes:
--   'committed'          moved the balance now (late = the hold had expired,
--                        but its credits were still free)
--   'already_committed'  moved it before; the stored result, nothing moves
--   'released'           the hold was released: nothing moves
--   'expired'            expired, and the credits are no longer free
--                        (available says what is); nothing moves
--   'unknown_hold'
CREATE FUNCTION paintlock_credit_commit(p_hold uuid)
RETURNS TABLE (outcome text, account_id text, amount bigint, late boolean,
               committed_at timestamptz, balance_after bigint, expires_at timestamptz,
               available bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_account text;
  v_hold credit_holds%ROWTYPE;
  v_balance bigint;
  v_available bigint;
  v_late boolean;
BEGIN
  SELECT h.account_id INTO v_account FROM credit_holds h WHERE h.id = p_hold;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'unknown_hold'::text, NULL::text, NULL::bigint, NULL::boolean,
                        NULL::timestamptz, NULL::bigint, NULL::timestamptz, NULL::bigint;
    RETURN;
  END IF;
  -- Account first, then the hold: the order every credit path takes.
  SELECT a.balance INTO v_balance FROM credit_accounts a WHERE a.id = v_account FOR UPDATE;
  SELECT * INTO v_hold FROM credit_holds h WHERE h.id = p_hold FOR UPDATE;

  IF v_hold.state = 'committed' THEN
    RETURN QUERY SELECT 'already_committed'::text, v_account, v_hold.amount, v_hold.late,
                        v_hold.closed_at, v_hold.balance_after, v_hold.expires_at, NULL::bigint;
    RETURN;
  END IF;
  IF v_hold.state = 'released' THEN
    RETURN QUERY SELECT 'released'::text, v_account, v_hold.amount, NULL::boolean,
                        NULL::timestamptz, NULL::bigint, v_hold.expires_at, NULL::bigint;
    RETURN;
  END IF;

  -- 'held' or swept 'expired': only the clock decides whether it is late.
  v_late := v_hold.expires_at <= now();
  IF v_late THEN
    -- The hold no longer counts in the sum: are its credits still free?
    v_available := v_balance - paintlock_credit_held(v_account);
    IF v_available < v_hold.amount THEN
      RETURN QUERY SELECT 'expired'::text, v_account, v_hold.amount, true,
                          NULL::timestamptz, NULL::bigint, v_hold.expires_at, v_available;
      RETURN;
    END IF;
  END IF;

  UPDATE credit_accounts a SET balance = a.balance - v_hold.amount, updated_at = now()
   WHERE a.id = v_account
  RETURNING a.balance INTO v_balance;
  UPDATE credit_holds h
     SET state = 'committed', closed_at = now(), late = v_late, balance_after = v_balance
   WHERE h.id = p_hold;
  RETURN QUERY SELECT 'committed'::text, v_account, v_hold.amount, v_late, now(), v_balance,
                      v_hold.expires_at, NULL::bigint;
END;
$$;

-- Releases a hold (an explicit cancel). Idempotent.
-- Outcomes: 'released', 'already_released', 'committed' (refused: the
-- balance moved; nothing changes), 'unknown_hold'.
CREATE FUNCTION paintlock_credit_release(p_hold uuid)
RETURNS TABLE (outcome text, account_id text, amount bigint, released_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_account text;
  v_hold credit_holds%ROWTYPE;
BEGIN
  SELECT h.account_id INTO v_account FROM credit_holds h WHERE h.id = p_hold;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'unknown_hold'::text, NULL::text, NULL::bigint, NULL::timestamptz;
    RETURN;
  END IF;
  PERFORM 1 FROM credit_accounts a WHERE a.id = v_account FOR UPDATE;
  SELECT * INTO v_hold FROM credit_holds h WHERE h.id = p_hold FOR UPDATE;
  IF v_hold.state = 'committed' THEN
    RETURN QUERY SELECT 'committed'::text, v_account, v_hold.amount, NULL::timestamptz;
  ELSIF v_hold.state = 'released' THEN
    RETURN QUERY SELECT 'already_released'::text, v_account, v_hold.amount, v_hold.closed_at;
  ELSE
    UPDATE credit_holds h SET state = 'released', closed_at = now() WHERE h.id = p_hold;
    RETURN QUERY SELECT 'released'::text, v_account, v_hold.amount, now();
  END IF;
END;
$$;

-- Adds p_amount to p_account (creating it), once per p_key.
-- Outcomes: 'credited' (balance_after), 'replayed' (the same key and amount
-- seen before: the stored result, nothing moves), 'key_reused' (the key was
-- used with another amount: amount is the original; nothing moves),
-- 'balance_limit' (the balance would pass p_max_balance; nothing moves).
CREATE FUNCTION paintlock_credit_topup(p_account text, p_key text, p_amount bigint,
                                       p_max_balance bigint)
RETURNS TABLE (outcome text, amount bigint, balance_after bigint, created_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_balance bigint;
  v_topup credit_topups%ROWTYPE;
BEGIN
  INSERT INTO credit_accounts AS a (id, balance) VALUES (p_account, 0)
  ON CONFLICT (id) DO NOTHING;
  -- Under the account lock the key check cannot race a second use of the key.
  SELECT a.balance INTO v_balance FROM credit_accounts a WHERE a.id = p_account FOR UPDATE;
  SELECT * INTO v_topup FROM credit_topups t
   WHERE t.account_id = p_account AND t.idempotency_key = p_key;
  IF FOUND THEN
    RETURN QUERY SELECT CASE WHEN v_topup.amount = p_amount THEN 'replayed' ELSE 'key_reused' END,
                        v_topup.amount, v_topup.balance_after, v_topup.created_at;
    RETURN;
  END IF;
  IF v_balance > p_max_balance - p_amount THEN
    RETURN QUERY SELECT 'balance_limit'::text, p_amount, v_balance, NULL::timestamptz;
    RETURN;
  END IF;
  UPDATE credit_accounts a SET balance = a.balance + p_amount, updated_at = now()
   WHERE a.id = p_account
  RETURNING a.balance INTO v_balance;
  INSERT INTO credit_topups (account_id, idempotency_key, amount, balance_after)
  VALUES (p_account, p_key, p_amount, v_balance);
  RETURN QUERY SELECT 'credited'::text, p_amount, v_balance, now();
END;
$$;

-- Renames up to p_limit lapsed 'held' rows 'expired' (accounting hygiene: it
-- keeps the open-holds index small). Skips rows a commit or release has
-- locked, so it never waits and never deadlocks. Returns how many it closed.
CREATE FUNCTION paintlock_credit_sweep(p_limit integer) RETURNS integer
LANGUAGE sql AS $$
  WITH lapsed AS (
    SELECT h.id FROM credit_holds h
     WHERE h.state = 'held' AND h.expires_at <= now()
     ORDER BY h.expires_at
     LIMIT p_limit
       FOR UPDATE SKIP LOCKED),
  closed AS (
    UPDATE credit_holds h SET state = 'expired', closed_at = now()
      FROM lapsed WHERE h.id = lapsed.id
    RETURNING 1)
  SELECT count(*)::integer FROM closed;
$$;

-- ------------------------------------------------------------ rate limits --

-- One token bucket per key ("bucket:subject"). tokens is the level at
-- refreshed_at; the level now is computed from the bucket's refill rate.
-- last_allowed is the decision of the statement that last wrote the row (the
-- only way RETURNING can report it). fillfactor leaves room for HOT updates:
-- no indexed column ever changes.
CREATE TABLE rate_limit_buckets (
  key          text PRIMARY KEY CHECK (length(key) BETWEEN 1 AND 300),
  tokens       numeric NOT NULL,
  refreshed_at timestamptz NOT NULL,
  last_allowed boolean NOT NULL
) WITH (fillfactor = 70);

-- A bucket's level now: refilled since refreshed_at, at most p_capacity.
-- greatest(…, 0): a taker whose transaction started a moment before the one
-- that wrote the row must not see time run backwards.
CREATE FUNCTION paintlock_bucket_level(p_tokens numeric, p_refreshed_at timestamptz,
                                       p_capacity numeric, p_refill_per_second numeric)
RETURNS numeric
LANGUAGE sql STABLE AS $$
  SELECT least(p_capacity,
               p_tokens + greatest(extract(epoch FROM now() - p_refreshed_at), 0) * p_refill_per_second);
$$;

-- --------------------------------------------------------------- leases --

CREATE TABLE leases (
  name       text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'),
  holder     text CHECK (length(holder) BETWEEN 1 AND 200),  -- NULL: released
  token      bigint NOT NULL,  -- the fencing token of the latest grant
  expires_at timestamptz,      -- NULL: released
  granted_at timestamptz NOT NULL
);

-- Grants p_name to p_holder for p_ttl if it is free, lapsed, or already
-- p_holder's (a restarted holder need not wait out its own lease). Every
-- grant, re-grants included, gets the next fencing token. The decision is the
-- one INSERT … ON CONFLICT … WHERE statement; the read after it only explains
-- a refusal.
-- Returns one row: granted, and the lease as it now is.
CREATE FUNCTION paintlock_lease_acquire(p_name text, p_holder text, p_ttl interval)
RETURNS TABLE (granted boolean, holder text, token bigint, expires_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
    INSERT INTO leases AS l (name, holder, token, expires_at, granted_at)
    VALUES (p_name, p_holder, 1, now() + p_ttl, now())
    ON CONFLICT (name) DO UPDATE
       SET holder = excluded.holder, token = l.token + 1,
           expires_at = excluded.expires_at, granted_at = excluded.granted_at
     WHERE l.holder IS NULL OR l.holder = excluded.holder OR l.expires_at <= now()
    RETURNING true, l.holder, l.token, l.expires_at;
  IF FOUND THEN RETURN; END IF;
  -- A new statement, a new snapshot: it sees the grant that beat us.
  RETURN QUERY SELECT false, l.holder, l.token, l.expires_at FROM leases l WHERE l.name = p_name;
END;
$$;

-- Extends a live lease held by p_holder with the current token p_token.
-- Outcomes: 'renewed', 'lost' (another grant happened, or it lapsed: acquire
-- again for a new token), 'unknown'. Returns the lease as it now is.
CREATE FUNCTION paintlock_lease_renew(p_name text, p_holder text, p_token bigint, p_ttl interval)
RETURNS TABLE (outcome text, holder text, token bigint, expires_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
    UPDATE leases l SET expires_at = now() + p_ttl
     WHERE l.name = p_name AND l.holder = p_holder AND l.token = p_token AND l.expires_at > now()
    RETURNING 'renewed'::text, l.holder, l.token, l.expires_at;
  IF FOUND THEN RETURN; END IF;
  RETURN QUERY SELECT 'lost'::text, l.holder, l.token, l.expires_at FROM leases l WHERE l.name = p_name;
  IF FOUND THEN RETURN; END IF;
  RETURN QUERY SELECT 'unknown'::text, NULL::text, NULL::bigint, NULL::timestamptz;
END;
$$;

-- Frees a lease held by p_holder with token p_token (lapsed or not: nobody
-- else was granted it since). Idempotent for that grant.
-- Outcomes: 'released', 'already_released', 'not_holder' (another grant
-- happened since: nothing changes), 'unknown'.
CREATE FUNCTION paintlock_lease_release(p_name text, p_holder text, p_token bigint)
RETURNS TABLE (outcome text, holder text, token bigint, expires_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_lease leases%ROWTYPE;
BEGIN
  SELECT * INTO v_lease FROM leases l WHERE l.name = p_name FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'unknown'::text, NULL::text, NULL::bigint, NULL::timestamptz;
  ELSIF v_lease.token = p_token AND v_lease.holder IS NULL THEN
    RETURN QUERY SELECT 'already_released'::text, NULL::text, v_lease.token, NULL::timestamptz;
  ELSIF v_lease.token = p_token AND v_lease.holder = p_holder THEN
    UPDATE leases l SET holder = NULL, expires_at = NULL WHERE l.name = p_name;
    RETURN QUERY SELECT 'released'::text, NULL::text, v_lease.token, NULL::timestamptz;
  ELSE
    RETURN QUERY SELECT 'not_holder'::text, v_lease.holder,
                        v_lease.token, v_lease.expires_at;
  END IF;
END;
$$;
