-- The demo: questions a model answers wrong first, and the corrections.
-- Run on its own from the repository's root, against the scripted model:
--   rm -f demo.db && sqlite3 demo.db < sql/shop.sql
--   scripts/try.sh --script examples/demo_script.json demo.db examples/demo.sql
-- scripts/demo.sh runs it with your model when one is configured.
.load ./build/querypilot
CREATE VIRTUAL TABLE temp.top5 USING ask('Which five customers spent the most last year?');
.mode box
SELECT * FROM top5;
.mode list
SELECT * FROM ask('Which five customers spent the most last year?');
SELECT * FROM ask('How many orders came from each country?');
SELECT row ->> 'category' AS category, row ->> 'revenue' AS revenue
  FROM ask('What is the revenue per product category?');
SELECT * FROM ask('Which customers placed more than 10 orders?');
SELECT * FROM ask('Delete the refunded orders');
.mode box
SELECT id, question, status, attempts, llm_calls, review, prompt_tokens FROM agent_runs;
SELECT run_id, attempt, error_type, error, strategy, diff FROM agent_attempts;
