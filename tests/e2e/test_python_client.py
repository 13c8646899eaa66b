"""The same loop from Python's sqlite3 module, a second real client."""
import json
import sqlite3
import unittest

from harness import EXTENSION, LLMTestCase, sql_reply
from test_repair import CATEGORY_SQL, CATEGORY_SQL_WRONG_COLUMN, COUNTRY_SQL, COUNTRY_SQL_WRONG_TABLE, EXPECTED_CATEGORIES


class PythonClientTest(LLMTestCase):
    def connect(self, provider):
        # Settings come from the environment when the extension loads; here
        # they are given in SQL instead, as a Python program would.
        con = sqlite3.connect(self.db)
        if not hasattr(con, "enable_load_extension"):
            self.fail("this Python's sqlite3 cannot load extensions; use Debian's /usr/bin/python3")
        con.enable_load_extension(True)
        con.load_extension(EXTENSION)
        con.enable_load_extension(False)
        base = self.llm.base + ("/v1" if provider == "openai" else "")
        for key, value in (("provider", provider), ("base_url", base), ("model", "scripted-model")):
            con.execute("SELECT agent_config(?, ?)", (key, value))
        self.addCleanup(con.close)
        return con

    def test_repairs_from_python(self):
        for provider in ("openai", "anthropic"):
            with self.subTest(provider=provider):
                self.llm.load({"rules": [
                    {"match": "each country", "replies": [sql_reply(COUNTRY_SQL_WRONG_TABLE), sql_reply(COUNTRY_SQL)]},
                    {"match": "revenue per product", "replies": [sql_reply(CATEGORY_SQL_WRONG_COLUMN), sql_reply(CATEGORY_SQL)]},
                ]})
                con = self.connect(provider)
                rows = [json.loads(r) for (r,) in con.execute(
                    "SELECT row FROM ask(?)", ("What is the revenue per product category?",))]
                self.assertEqual(rows, EXPECTED_CATEGORIES)
                cur = con.execute("SELECT row, run_id, sql FROM ask('How many orders came from each country?')")
                self.assertEqual([d[0] for d in cur.description], ["row", "run_id", "sql"])
                first = cur.fetchone()
                self.assertEqual(json.loads(first[0]), {"country": "Canada", "order_count": 18})
                self.assertEqual(first[2], COUNTRY_SQL)
                cur.fetchall()
                runs = con.execute("SELECT status, attempts FROM agent_runs ORDER BY id").fetchall()
                self.assertEqual(runs, [("ok", 2), ("ok", 2)])
                errors = con.execute("SELECT error_type FROM agent_attempts WHERE attempt = 1 ORDER BY run_id").fetchall()
                self.assertEqual(errors, [("column_not_found",), ("table_not_found",)])

    def test_errors_are_python_exceptions(self):
        self.llm.load({"rules": [{"match": "Drop", "replies": [sql_reply("DROP TABLE orders")]}]})
        con = self.connect("openai")
        with self.assertRaises(sqlite3.OperationalError) as cm:
            con.execute("SELECT * FROM ask('Drop everything')").fetchall()
        self.assertIn("refused", str(cm.exception))
        with self.assertRaises(sqlite3.OperationalError) as cm:
            con.execute("SELECT * FROM ask(NULL)").fetchall()
        self.assertIn("the question is NULL", str(cm.exception))
        with self.assertRaises(sqlite3.OperationalError) as cm:
            con.execute("SELECT * FROM ask(?)", ("x" * (1 << 20),)).fetchall()
        self.assertIn("the limit is 8192", str(cm.exception))
        with self.assertRaises(sqlite3.OperationalError) as cm:
            con.execute("SELECT agent_config('no_such_setting')").fetchall()
        self.assertIn("unknown setting 'no_such_setting'", str(cm.exception))
        self.assertEqual(con.execute("SELECT COUNT(*) FROM orders").fetchone(), (100,))


if __name__ == "__main__":
    unittest.main()
