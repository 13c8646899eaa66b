"""Slow answers explained: per-node times in agent_runs.node_times, and slow
scans found in SQLite's own plan (agent/quality/performance.h) on a table of
a million rows, with the CREATE INDEX that helps, never run by QueryPilot."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import SHOP_SQL, SQLITE3, TIMED, LLMTestCase, connect, sql_reply

ROWS = 1_000_000
MAKE_BIG = """
CREATE TABLE orders_big (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, city TEXT NOT NULL,
                         status TEXT NOT NULL, amount REAL NOT NULL);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < %d)
INSERT INTO orders_big SELECT i, 'customer ' || (i %% 250000), printf('City%%03d', i %% 500),
  CASE i %% 5 WHEN 0 THEN 'refunded' WHEN 1 THEN 'paid' WHEN 2 THEN 'shipped' ELSE 'delivered' END,
  (i %% 1000) / 10.0 FROM c;
""" % ROWS
BY_CITY = "SELECT count(*) AS n FROM orders_big WHERE city = 'City042'"
EVERY = "SELECT id, customer, city FROM orders_big"
SELF_JOIN = "SELECT count(*) AS n FROM orders_big a JOIN orders_big b ON a.customer = b.customer"
SMALL = "SELECT count(*) AS n FROM orders WHERE status = 'paid'"
SCRIPT = {"rules": [
    {"match": "City042", "replies": [sql_reply(BY_CITY)]},
    {"match": "every order", "replies": [sql_reply(EVERY)]},
    {"match": "same customer", "replies": [sql_reply(SELF_JOIN)]},
    {"match": "paid orders", "replies": [sql_reply(SMALL)]},
]}
CITY_INDEX = 'CREATE INDEX IF NOT EXISTS "idx_orders_big_city" ON "orders_big"("city");'


class SlowScanTest(LLMTestCase):
    @classmethod
    def setUpClass(cls):
        cls.big_dir = tempfile.mkdtemp(prefix="qp-big-")
        cls.big = os.path.join(cls.big_dir, "big.db")
        subprocess.run([SQLITE3, cls.big], input=MAKE_BIG, check=True, text=True, timeout=600)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.big_dir, ignore_errors=True)

    def setUp(self):
        super().setUp()
        self.llm.load(SCRIPT)
        # Each test gets its own copy of the million rows beside the shop tables.
        shutil.copy(self.big, self.db)
        with open(SHOP_SQL) as f:
            subprocess.run([SQLITE3, self.db], stdin=f, check=True)
        self.con = connect(self.db, self.llm.env())
        self.addCleanup(self.con.close)
        self.con.execute("SELECT agent_config('answer_cache', 0)")

    def ask(self, question):
        return self.con.execute("SELECT row FROM ask(?)", (question,)).fetchall()

    def last_run(self):
        cur = self.con.execute("SELECT id, status, llm_calls, advice, node_times, duration_ms FROM agent_runs "
                               "ORDER BY id DESC LIMIT 1")
        return dict(zip([d[0] for d in cur.description], cur.fetchone()))

    def attempt_issues(self, run_id):
        (reflection,) = self.con.execute("SELECT reflection FROM agent_attempts WHERE run_id = ? ORDER BY attempt "
                                         "DESC LIMIT 1", (run_id,)).fetchone()
        return json.loads(reflection)["issues"]

    def exec_ms(self, run_id):
        return self.con.execute("SELECT exec_ms FROM agent_attempts WHERE run_id = ?", (run_id,)).fetchone()[0]

    def test_a_filter_on_an_unindexed_column_gets_a_working_index(self):
        self.assertEqual(self.ask("How many orders came from City042?"), [('{"n":2000}',)])
        run = self.last_run()
        self.assertEqual((run["status"], run["llm_calls"]), ("ok", 2))  # a note, never a retry; and the review
        self.assertEqual(run["advice"], CITY_INDEX)
        issues = [i for i in self.attempt_issues(run["id"]) if i["kind"] == "slow_scan"]
        self.assertEqual(len(issues), 1)
        self.assertEqual(issues[0]["severity"], "note")
        self.assertIn("orders_big", issues[0]["message"])
        self.assertIn("city", issues[0]["message"])
        self.assertIn("1000000 rows", issues[0]["message"])
        slow_ms = self.exec_ms(run["id"])
        # QueryPilot never ran it: the index is not there until the user runs it.
        self.assertEqual(self.con.execute("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                                          "tbl_name = 'orders_big'").fetchone(), (0,))
        self.con.execute(run["advice"])
        self.assertEqual(self.ask("How many orders came from City042?"), [('{"n":2000}',)])
        again = self.last_run()
        self.assertIsNone(again["advice"])
        self.assertEqual([i for i in self.attempt_issues(again["id"]) if i["kind"] == "slow_scan"], [])
        fast_ms = self.exec_ms(again["id"])
        print("\n[figures] City042 count on %d rows: %.1f ms scanning, %.2f ms with the index" % (
            ROWS, slow_ms, fast_ms))
        if TIMED:
            self.assertLess(fast_ms, slow_ms)

    def test_no_warning_when_the_question_needs_every_row_or_the_table_is_small(self):
        self.assertEqual(len(self.con.execute("SELECT row FROM ask('List every order')").fetchmany(5)), 5)
        self.assertIsNone(self.last_run()["advice"])
        self.assertEqual(self.ask("How many paid orders are there?"), [('{"n":18}',)])
        self.assertIsNone(self.last_run()["advice"])

    def test_a_query_stopped_by_its_budget_names_the_scan_and_the_index(self):
        self.con.execute("SELECT agent_config('sql_timeout_ms', 300)")
        with self.assertRaises(Exception) as e:
            self.ask("Which orders have the same customer?")
        self.assertIn("time budget of 300 ms", str(e.exception))
        self.assertIn("reads all of orders_big", str(e.exception))
        self.assertIn('ON "orders_big"("customer")', str(e.exception))
        run = self.last_run()
        self.assertEqual(run["status"], "failed")
        self.assertIn('"idx_orders_big_customer"', run["advice"])

    def test_node_times_add_up_to_the_duration(self):
        self.ask("How many orders came from City042?")
        self.ask("How many paid orders are there?")
        for (node_times, duration) in self.con.execute("SELECT node_times, duration_ms FROM agent_runs"):
            times = json.loads(node_times)
            nodes = {k: v for k, v in times.items() if "/" not in k}
            self.assertEqual(list(nodes)[:3], ["cache", "load_schema", "generate"])
            self.assertEqual(list(nodes)[-1], "finish")
            self.assertAlmostEqual(sum(nodes.values()), duration, delta=0.05)
            # The parts of load_schema fit inside it.
            parts = sum(v for k, v in times.items() if k.startswith("load_schema/"))
            self.assertLessEqual(parts, nodes["load_schema"] + 0.01)
        metrics = dict(self.con.execute("SELECT metric, value FROM agent_metrics WHERE metric LIKE 'node_ms:%'"))
        self.assertIn("node_ms:generate", metrics)
        self.assertIn("node_ms:execute", metrics)


if __name__ == "__main__":
    unittest.main()
