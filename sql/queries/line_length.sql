-- $1 painting id: whether it exists, and how many wait in its line now.
SELECT s.line_length, s.state FROM painting_states s WHERE s.id = $1::text
