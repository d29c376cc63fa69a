-- The idempotency store reads its keys by index whatever the statistics said
-- when its connection planned the statements.
--
-- A gateway's connection keeps a generic plan for a statement after five
-- calls. Made while idempotency_keys was analysed (nearly) empty, as a shop's
-- first keys leave it, the record and the forget (sql/queries/
-- idempotency_record.sql, idempotency_forget.sql) were sequential scans, and
-- so was the claim's read of a key that exists: every call read the whole
-- table until the next ANALYZE. Measured on one connection that planned them
-- on an empty table, after 5,000 keys arrived: one sequential scan a call for
-- each of the three (EXPLAIN EXECUTE: "Filter: ((key = $1) AND (claim = $2)
-- AND …)", no index condition); none with the settings below.
--
-- A statement sent from the gateway cannot carry settings of its own, so the
-- record and the forget move into functions that do, like the reserve (0020),
-- the credit functions (0021) and the checkout's other calls (0024). Each
-- touches one row by its primary key, so enable_seqscan = off leaves the
-- index as the only plan. tests/idempotency_test.cc counts the scans.

ALTER FUNCTION paintlock_idempotency_claim(text, text, text, text, interval)
  SET plan_cache_mode = force_generic_plan SET enable_seqscan = off;

-- Records the answer while the claim is still the caller's; true if it was.
CREATE FUNCTION paintlock_idempotency_record(p_key text, p_claim text, p_status integer,
                                             p_body text, p_location text) RETURNS boolean
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
BEGIN
  UPDATE idempotency_keys k
     SET state = 'done', status = p_status, body = p_body, location = NULLIF(p_location, ''),
         locked_until = NULL, finished_at = now()
   WHERE k.key = p_key AND k.claim = p_claim AND k.state = 'in_progress';
  RETURN FOUND;
END;
$$;

-- Drops a claim whose request changed nothing; true if it was the caller's.
CREATE FUNCTION paintlock_idempotency_forget(p_key text, p_claim text) RETURNS boolean
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
BEGIN
  DELETE FROM idempotency_keys k
   WHERE k.key = p_key AND k.claim = p_claim AND k.state = 'in_progress';
  RETURN FOUND;
END;
$$;
