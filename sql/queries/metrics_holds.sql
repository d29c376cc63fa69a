-- GET /metrics: how many holds are in each condition that needs watching, as
-- paintlockctl holds lists them (sql/migrations/0014: paintlock_hold_conditions);
-- lapsed holds with nothing more to happen are not counted.
SELECT condition, paintlock_hold_is_stuck(condition) AS stuck, count(*)::bigint AS holds
  FROM paintlock_hold_conditions
 WHERE condition IS NOT NULL AND condition <> 'lapsed'
 GROUP BY condition
