-- Exact daily quotas per visitor, and the licences that lift them (issue 6;
-- locks/QUOTAS.md).
--
-- Invariants:
--   * quota_usage has one row per (quota, subject). `used` counts the requests
--     allowed on `day`, the calendar day in the quota's time zone (by the
--     database clock) on which the row last counted. A row whose day is not
--     today counts as 0: the first request of a new day overwrites it, so no
--     job has to run at midnight and there is nothing to clean up beyond one
--     row per subject ever seen.
--   * Every decision is one guarded upsert (sql/queries/quota_consume.sql):
--     the check and the increment happen together under the row's lock, so
--     any number of concurrent requests, through any number of gateways,
--     allow at most `limit` a day; a refused request writes nothing.
--   * licenses has one row per Stripe subscription, written only from signed,
--     deduplicated webhook events (paintlock_apply_subscription). A row shows
--     the newest subscription data seen, by the event's `created` time; a
--     cancellation is final (Stripe never revives a canceled subscription),
--     so an older event delivered late can never un-cancel a licence.
--   * Licence keys are never stored: only their SHA-256. A key is derived
--     from the subscription id with PAINTLOCK_LICENSE_SECRET (locks/licenses.h),
--     so the seller can always show it again; nobody can from the database.

CREATE TABLE quota_usage (
  quota   text NOT NULL CHECK (quota ~ '^[a-z][a-z0-9_-]{0,31}$'),
  -- 'visitor:' + HMAC of the client address (gateway/visitor.h), or
  -- 'subject:' + a subject named by a server-to-server caller.
  subject text NOT NULL CHECK (length(subject) BETWEEN 1 AND 160),
  day     date NOT NULL,
  used    integer NOT NULL CHECK (used >= 0),
  last_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (quota, subject)
) WITH (fillfactor = 80);  -- room on the page for HOT updates: the counter is never indexed

-- The next midnight after `p_day` in time zone `p_zone`: when its count resets.
CREATE FUNCTION paintlock_quota_resets_at(p_day date, p_zone text) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
  SELECT (p_day + 1)::timestamp AT TIME ZONE p_zone;
$$;

CREATE TABLE licenses (
  subscription_id text PRIMARY KEY CHECK (length(subscription_id) BETWEEN 1 AND 255),
  customer_id     text NOT NULL CHECK (length(customer_id) BETWEEN 1 AND 255),
  key_sha256      text NOT NULL UNIQUE CHECK (key_sha256 ~ '^[0-9a-f]{64}$'),
  -- Stripe's subscription status: incomplete, incomplete_expired, trialing,
  -- active, past_due, canceled, unpaid, paused.
  status          text NOT NULL CHECK (status ~ '^[a-z_]{1,40}$'),
  current_period_end timestamptz,
  -- The Stripe event whose subscription data this row shows: events older
  -- than it are not applied (order-safety).
  updated_from_event_created timestamptz NOT NULL,
  updated_from_event_id      text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX licenses_customer ON licenses (customer_id);

-- Subscription events are deduplicated in stripe_events like checkout events.
ALTER TABLE stripe_events ADD COLUMN subscription_id text;
CREATE INDEX stripe_events_subscription ON stripe_events (subscription_id)
  WHERE subscription_id IS NOT NULL;

-- How far along its life a subscription status is: orders two events Stripe
-- stamped in the same second (created as incomplete, then active), and marks
-- the final states (2), which nothing overrides.
CREATE FUNCTION paintlock_subscription_stage(p_status text) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_status = 'incomplete' THEN 0
              WHEN p_status IN ('canceled', 'incomplete_expired') THEN 2
              ELSE 1 END;
$$;

-- True while a licence lifts quotas: the subscription is paid for or in its
-- trial, or a renewal payment is being retried (past_due: Stripe cancels or
-- marks it unpaid when its retries end). The period end is a backstop for a
-- lost `deleted` webhook: two days after it, a licence whose renewal was
-- never heard of stops working until an event says otherwise.
CREATE FUNCTION paintlock_license_active(p_status text, p_period_end timestamptz)
RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT p_status IN ('active', 'trialing', 'past_due')
         AND coalesce(p_period_end > now() - interval '2 days', true);
$$;

-- Applies one customer.subscription.created/updated/deleted event, once.
--
-- Returns one row: the outcome and the licence's status afterwards.
-- Outcomes: duplicate (event seen before), created (first data for this
-- subscription), updated, stale (older than what the row shows, or the
-- subscription is already canceled: nothing changed).
CREATE FUNCTION paintlock_apply_subscription(
    p_event_id text, p_event_type text, p_event_created timestamptz, p_subscription text,
    p_customer text, p_status text, p_period_end timestamptz, p_key_sha256 text)
RETURNS TABLE (outcome text, status text)
LANGUAGE plpgsql AS $$
DECLARE
  -- A deleted subscription is canceled, whatever the object says.
  v_status text := CASE WHEN p_event_type = 'customer.subscription.deleted' THEN 'canceled'
                        ELSE p_status END;
  v_inserted boolean;
  v_outcome text;
BEGIN
  INSERT INTO stripe_events (id, type, subscription_id, outcome)
  VALUES (p_event_id, p_event_type, p_subscription, 'applying')
  ON CONFLICT (id) DO NOTHING;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'duplicate'::text, l.status FROM licenses l
                  WHERE l.subscription_id = p_subscription;
    IF NOT FOUND THEN RETURN QUERY SELECT 'duplicate'::text, NULL::text; END IF;
    RETURN;
  END IF;

  -- The key hash is kept from the first event: it never changes for a
  -- subscription, even if the secret is rolled later.
  INSERT INTO licenses AS l (subscription_id, customer_id, key_sha256, status, current_period_end,
                             updated_from_event_created, updated_from_event_id)
  VALUES (p_subscription, p_customer, p_key_sha256, v_status, p_period_end, p_event_created,
          p_event_id)
  ON CONFLICT (subscription_id) DO UPDATE
     SET customer_id = EXCLUDED.customer_id,
         status = EXCLUDED.status,
         current_period_end = EXCLUDED.current_period_end,
         updated_from_event_created = EXCLUDED.updated_from_event_created,
         updated_from_event_id = EXCLUDED.updated_from_event_id,
         updated_at = now()
   WHERE paintlock_subscription_stage(l.status) < 2
     AND (paintlock_subscription_stage(EXCLUDED.status) = 2
          OR EXCLUDED.updated_from_event_created > l.updated_from_event_created
          OR (EXCLUDED.updated_from_event_created = l.updated_from_event_created
              AND paintlock_subscription_stage(EXCLUDED.status)
                  >= paintlock_subscription_stage(l.status)))
  RETURNING (l.xmax = 0) INTO v_inserted;

  v_outcome := CASE WHEN v_inserted IS NULL THEN 'stale'
                    WHEN v_inserted THEN 'created'
                    ELSE 'updated' END;
  UPDATE stripe_events e SET outcome = v_outcome, applied_at = now() WHERE e.id = p_event_id;
  RETURN QUERY SELECT v_outcome, l.status FROM licenses l WHERE l.subscription_id = p_subscription;
END;
$$;
