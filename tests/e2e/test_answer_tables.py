"""Answer tables: CREATE VIRTUAL TABLE temp.name USING ask('question') gives
the answer's own columns, from the sqlite3 shell and Python's sqlite3."""
import json
import subprocess
import unittest

from harness import EXTENSION, SQLITE3, LLMTestCase, ShellError, connect, file_digest, sql_reply
from test_repair import CATEGORY_SQL, CATEGORY_SQL_WRONG_COLUMN

CATEGORY_Q = "What is the revenue per product category?"
COUNT_SQL = "SELECT COUNT(*) AS n FROM orders"
SCRIPT = {"rules": [
    {"match": "revenue per product", "replies": [sql_reply(CATEGORY_SQL_WRONG_COLUMN), sql_reply(CATEGORY_SQL)]},
    {"match": "How many orders", "replies": [sql_reply(COUNT_SQL)]},
    {"match": "Delete", "replies": [sql_reply("DELETE FROM orders")]},
    {"match": "own sql", "replies": [sql_reply("SELECT name AS sql, id AS run_id FROM customers ORDER BY id LIMIT 2")]},
    {"match": "every name", "replies": [sql_reply(
        "SELECT id + 100 AS run_id, id + 200 AS querypilot_run_id, name AS sql, email AS querypilot_sql, "
        "1 AS A, 2 AS a FROM customers ORDER BY id LIMIT 1")]},
    {"match": "infinity", "replies": [sql_reply("SELECT 1e999 AS big, -1e999 AS small")]},
]}


class AnswerTableShellTest(LLMTestCase):
    def shell(self, script, env=None):
        self.llm.load(SCRIPT)
        p = subprocess.run([SQLITE3, "-batch", self.db], input=".load %s\n%s\n" % (EXTENSION, script),
                           capture_output=True, text=True, env=env or self.llm.env(), timeout=300)
        return p.stdout, p.stderr

    def test_csv_with_headers_shows_the_answers_columns_and_the_sql(self):
        out, err = self.shell("\n".join([
            "CREATE VIRTUAL TABLE temp.t USING ask('%s');" % CATEGORY_Q,
            ".headers on", ".mode csv",
            "SELECT * FROM t;",
            "SELECT sql FROM t LIMIT 1;",
        ]))
        self.assertEqual(err, "")
        self.assertEqual(out.splitlines(), [
            "category,revenue", "Outdoor,10839.0", "Electronics,10006.0", "Home,5730.0", "Kitchen,3440.7",
            "sql", '"%s"' % CATEGORY_SQL.replace('"', '""'),
        ])

    def test_the_table_is_a_run_with_its_corrections_and_its_rows_stay_current(self):
        res = self.session([
            "CREATE VIRTUAL TABLE temp.t USING ask('%s')" % CATEGORY_Q,
            "CREATE VIRTUAL TABLE temp.n USING ask('How many orders are there?')",
            "SELECT * FROM n",
            "INSERT INTO orders (customer_id, status, ordered_at) VALUES (1, 'paid', '2024-01-01')",
            "SELECT n, run_id FROM n",
            "SELECT id, status, attempts, llm_calls FROM agent_runs ORDER BY id",
            "SELECT name, type FROM pragma_table_info('t')",
            "DROP TABLE t",
            "SELECT name FROM sqlite_temp_master WHERE name <> 'ask' ORDER BY name",  # temp.ask is QueryPilot's own
            "SELECT * FROM ask('How many orders are there?')",
        ], SCRIPT)
        for r in res:
            self.assertNotIsInstance(r, ShellError, r)
        self.assertEqual(res[2], [{"n": 100}])
        self.assertEqual(res[4], [{"n": 101, "run_id": 2}])  # the SQL ran again: no model call
        # Each with its review.
        self.assertEqual(res[5], [{"id": 1, "status": "ok", "attempts": 2, "llm_calls": 3},
                                  {"id": 2, "status": "ok", "attempts": 1, "llm_calls": 2}])
        # Declared types where SQLite reports one (category is a TEXT column;
        # the sum is an expression, with none).
        self.assertEqual(res[6], [{"name": "category", "type": "TEXT"}, {"name": "revenue", "type": ""}])
        self.assertEqual(res[8], [{"name": "n"}])
        self.assertEqual(len(self.llm.log()), 3)

    def test_hidden_columns_make_way_for_the_answers_own(self):
        res = self.session([
            "CREATE VIRTUAL TABLE temp.t USING ask('Show me the own sql')",
            "SELECT *, querypilot_run_id, querypilot_sql FROM t",
        ], SCRIPT)
        self.assertEqual(res[1][0]["sql"], "Amelia Hughes")
        self.assertEqual(res[1][0]["run_id"], 1)
        self.assertEqual(res[1][0]["querypilot_run_id"], 1)
        self.assertIn("AS sql", res[1][0]["querypilot_sql"])

    def test_the_answers_confidence_is_a_hidden_column(self):
        res = self.session([
            "CREATE VIRTUAL TABLE temp.t USING ask('Show me the own sql')",
            "SELECT confidence, confidence_reason FROM t LIMIT 1",
            "SELECT confidence, confidence_reason FROM agent_runs WHERE id = 1",
            "SELECT count(*) AS n FROM pragma_table_info('t') WHERE name LIKE 'confidence%'",
        ], SCRIPT)
        for r in res:
            self.assertNotIsInstance(r, ShellError, r)
        self.assertIsInstance(res[2][0]["confidence"], int)
        self.assertEqual(res[1][0]["confidence"], res[2][0]["confidence"])
        # Its reason, the run's: one reading, nothing found, the review accepted it.
        self.assertEqual(res[2][0]["confidence_reason"], "one reading, no finding, the model's review accepted it")
        self.assertEqual(res[1][0]["confidence_reason"], res[2][0]["confidence_reason"])
        self.assertEqual(res[3], [{"n": 0}])  # hidden: SELECT * leaves them out

    def test_hidden_columns_take_names_the_answer_left_free(self):
        # run_id and querypilot_run_id, sql and querypilot_sql are all the
        # answer's; A and a are one name to SQLite.
        res = self.session([
            "CREATE VIRTUAL TABLE temp.t USING ask('Show every name')",
            "SELECT name FROM pragma_table_xinfo('t') ORDER BY cid",
            "SELECT *, querypilot_run_id_2, querypilot_sql_2 FROM t",
        ], SCRIPT)
        for r in res:
            self.assertNotIsInstance(r, ShellError, r)
        self.assertEqual([r["name"] for r in res[1]], [
            "run_id", "querypilot_run_id", "sql", "querypilot_sql", "A", "a:1", "querypilot_run_id_2",
            "querypilot_sql_2", "confidence", "confidence_reason"])
        row = res[2][0]
        self.assertEqual((row["run_id"], row["querypilot_run_id"], row["sql"], row["A"], row["a:1"]),
                         (101, 201, "Amelia Hughes", 1, 2))
        self.assertEqual(row["querypilot_run_id_2"], 1)  # the run's id
        self.assertIn("AS querypilot_sql", row["querypilot_sql_2"])

    def test_an_infinity_is_the_same_in_ask_and_in_an_answer_table(self):
        # JSON has no Infinity: ask() writes 9.0e+999, as SQLite's json
        # functions do, and reads back the answer table's value.
        res = self.session([
            "CREATE VIRTUAL TABLE temp.inf USING ask('Show me infinity')",
            "SELECT row FROM ask('Show me infinity')",
            "SELECT big = 9e999 AS big_inf, small = -9e999 AS small_inf, typeof(big) AS t FROM inf",
            "SELECT (SELECT row ->> '$.big' FROM ask('Show me infinity')) = big AS same_big, "
            "(SELECT row ->> '$.small' FROM ask('Show me infinity')) = small AS same_small FROM inf",
        ], SCRIPT)
        for r in res:
            self.assertNotIsInstance(r, ShellError, r)
        self.assertEqual(res[1], [{"row": '{"big":9.0e+999,"small":-9.0e+999}'}])
        self.assertEqual(json.loads(res[1][0]["row"]), {"big": float("inf"), "small": float("-inf")})
        self.assertEqual(res[2], [{"big_inf": 1, "small_inf": 1, "t": "real"}])
        self.assertEqual(res[3], [{"same_big": 1, "same_small": 1}])

    def test_a_table_outside_temp_is_refused_and_the_file_is_unchanged(self):
        before = file_digest(self.db)
        out, err = self.shell("CREATE VIRTUAL TABLE t USING ask('How many orders are there?');\n"
                              "CREATE VIRTUAL TABLE main.t USING ask('How many orders are there?');")
        self.assertEqual(err.count("an answer table must be a temp table"), 2, err)
        self.assertEqual(file_digest(self.db), before)
        self.assertEqual(self.llm.log(), [])  # refused before any model call

    def test_what_does_not_end_in_an_answer_creates_nothing(self):
        res = self.session([
            "CREATE VIRTUAL TABLE temp.t USING ask('Delete the refunded orders')",
            "CREATE VIRTUAL TABLE temp.t USING ask()",
            "CREATE VIRTUAL TABLE temp.t USING ask('a', 'b')",
            "CREATE VIRTUAL TABLE temp.t USING ask(How many orders)",
            "CREATE VIRTUAL TABLE temp.t USING ask('')",
            "CREATE VIRTUAL TABLE temp.t USING ask('How many orders are there?')",
            "CREATE VIRTUAL TABLE temp.t USING ask('How many orders are there?')",
            "SELECT name FROM sqlite_temp_master WHERE name <> 'ask'",
            "SELECT count(*) AS runs FROM agent_runs",
            # One string literal, nothing else: SQLite hands the argument over
            # as text and evaluates none of it.
            "CREATE VIRTUAL TABLE temp.u USING ask('How many ' || 'orders?')",
            "CREATE VIRTUAL TABLE temp.u USING ask(42)",
            "CREATE VIRTUAL TABLE temp.u USING ask('How many' 'orders?')",
            "CREATE VIRTUAL TABLE temp.u USING ask(\"How many orders are there?\")",
            "SELECT count(*) AS runs FROM agent_runs",
        ], SCRIPT)
        self.assertIsInstance(res[0], ShellError)
        self.assertTrue(res[0].startswith("ask(): the model's SQL was refused: deleting from orders"), res[0])
        self.assertIn("takes one question, not 0", res[1])
        self.assertIn("takes one question, not 2", res[2])
        self.assertIn("one string literal in single quotes", res[3])
        self.assertIn("the question is empty", res[4])
        self.assertEqual(res[5], [])
        self.assertIn("already exists", res[6])
        self.assertEqual(res[7], [{"name": "t"}])
        self.assertEqual(res[8], [{"runs": 2}])  # the refused one and t: nothing asked twice
        for r in res[9:13]:
            self.assertIsInstance(r, ShellError)
            self.assertIn("one string literal in single quotes", r)
        self.assertEqual(res[13], [{"runs": 2}])  # refused before any model call

    def test_without_a_model_the_create_fails_with_asks_message(self):
        env = self.llm.env()
        for k in ("QUERYPILOT_BASE_URL", "QUERYPILOT_MODEL"):
            env.pop(k)
        out, err = self.shell("CREATE VIRTUAL TABLE temp.t USING ask('How many orders are there?');\n"
                              "SELECT count(*) FROM sqlite_temp_master WHERE name <> 'ask';", env)
        self.assertIn("ask(): no model endpoint is configured", err)
        self.assertEqual(out.strip(), "0")


class AnswerTablePythonTest(LLMTestCase):
    def test_cursor_description_has_the_answers_columns(self):
        self.llm.load(SCRIPT)
        con = connect(self.db, self.llm.env())
        self.addCleanup(con.close)
        con.execute("CREATE VIRTUAL TABLE temp.top USING ask('%s')" % CATEGORY_Q)
        cur = con.execute("SELECT * FROM top")
        self.assertEqual([d[0] for d in cur.description], ["category", "revenue"])
        self.assertEqual(cur.fetchall(), [("Outdoor", 10839.0), ("Electronics", 10006.0),
                                          ("Home", 5730.0), ("Kitchen", 3440.7)])

    def test_every_storage_class_reads_as_the_sql_gives_it_across_batches(self):
        # 700 rows: several batches of the scan, whose bytes share one arena
        # that is refilled from batch to batch. Text with a NUL inside keeps
        # its length; empty text, an empty blob and NULL stay three things.
        sql = ("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 700) "
               "SELECT i, CASE i % 8 WHEN 0 THEN NULL WHEN 1 THEN 'a' || char(0) || 'b' || i WHEN 2 THEN '' "
               "WHEN 3 THEN x'' WHEN 4 THEN CAST(replace(hex(zeroblob(i)), '00', 'xy') AS BLOB) "
               "WHEN 5 THEN i * 1.5 WHEN 6 THEN 9223372036854775807 - i "
               "ELSE replace(hex(zeroblob(i % 50)), '00', char(233, 0x1F600)) END AS v, "
               "char(0) AS nul FROM c")
        self.llm.load({"rules": [{"match": "", "replies": [sql_reply(sql)]}]})
        con = connect(self.db, self.llm.env())
        self.addCleanup(con.close)
        con.execute("CREATE VIRTUAL TABLE temp.mixed USING ask('Every kind of value')")
        got = con.execute("SELECT i, v, typeof(v), nul, length(nul) FROM mixed").fetchall()
        want = con.execute("SELECT i, v, typeof(v), nul, length(nul) FROM (%s)" % sql).fetchall()
        self.assertEqual(len(got), 700)
        self.assertEqual(got, want)
        self.assertEqual([r[2] for r in got[:8]],
                         ["text", "text", "blob", "blob", "real", "integer", "text", "null"])
        self.assertEqual(got[0][1], "a\x00b1")


if __name__ == "__main__":
    unittest.main()


class StreamedRowsTest(LLMTestCase):
    """ask() writes the first rows (those the check read) from its buffer and
    the rest straight from the running statement: both give the same JSON
    for every storage class."""

    def test_rows_past_the_first_page_have_the_same_json_as_the_first(self):
        import sqlite3
        con = sqlite3.connect(self.db)
        con.execute("CREATE TABLE mixed(id INTEGER PRIMARY KEY, v)")
        kinds = ["42", "1.0", "2.5e300", "'a \"quote\"' || char(10) || 'b'", "X'00ff'", "NULL",
                 "CAST(X'61ff62' AS TEXT)"]
        for i in range(700):
            con.execute("INSERT INTO mixed VALUES (?, %s)" % kinds[i % len(kinds)], (i,))
        con.commit()
        con.close()
        self.llm.load({"rules": [{"match": "", "replies": [
            sql_reply("SELECT id % 7 AS k, v FROM mixed ORDER BY id")]}]})
        con = connect(self.db, self.llm.env())
        self.addCleanup(con.close)
        rows = [r[0] for r in con.execute("SELECT row FROM ask('Every value of mixed, in order')")]
        self.assertEqual(len(rows), 700)
        for i, row in enumerate(rows):
            self.assertEqual(row, rows[i % 7], "row %d" % i)
        self.assertEqual(rows[:7], [
            '{"k":0,"v":42}', '{"k":1,"v":1.0}', '{"k":2,"v":2.5e+300}', '{"k":3,"v":"a \\"quote\\"\\nb"}',
            '{"k":4,"v":"00ff"}', '{"k":5,"v":null}', '{"k":6,"v":"a\ufffdb"}'])
