-- $1 reservation id: its state now, or no row.
SELECT state, stripe_status FROM reservations WHERE id = $1::uuid
