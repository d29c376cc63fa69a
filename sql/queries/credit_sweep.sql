-- $1 the most holds to close in this batch. How many lapsed holds it closed.
SELECT paintlock_credit_sweep($1::integer) AS closed
