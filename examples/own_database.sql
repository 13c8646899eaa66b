-- The questions scripts/try.sh's scripted model answers about any database
-- (scripts/scripted_policy.py), here asked of the demo's shop database.
-- Run from the repository's root:
--   rm -f demo.db && sqlite3 demo.db < sql/shop.sql && scripts/try.sh demo.db examples/own_database.sql
-- On your own database, use your table and column names.
.mode list
SELECT * FROM ask('How many customers are there?');
SELECT * FROM ask('orders by status');
.mode box
SELECT attempt, error_type, error, hint FROM agent_attempts WHERE run_id = 1;
SELECT id, question, status, attempts FROM agent_runs;
