-- GET /metrics: how many holds are in each condition that needs watching, as
-- paintlockctl holds lists them (sql/migrations/0014: paintlock_hold_conditions);
-- lapsed holds with nothing more to happen are not counted.
-- MATERIALIZED: each candidate's condition is computed once. Pushed down into
-- the view, the filter and the grouping computed it three times a row (20,000
-- live holds: 539 ms a scrape, 228 ms with the fence).
WITH c AS MATERIALIZED (SELECT condition FROM paintlock_hold_conditions)
SELECT condition, paintlock_hold_is_stuck(condition) AS stuck, count(*)::bigint AS holds
  FROM c
 WHERE condition IS NOT NULL AND condition <> 'lapsed'
 GROUP BY condition
