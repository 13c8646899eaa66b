"""The same loop from Python's sqlite3 module, a second real client, and
from APSW, the Python library that can always load extensions."""
import json
import os
import sqlite3
import sys
import unittest

from harness import EXTENSION, SOURCE_DIR, LLMTestCase, install_apsw, sql_reply
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
                # This connection's two runs: the database's history holds
                # the other provider's too.
                runs = con.execute("SELECT status, attempts FROM agent_runs ORDER BY id DESC LIMIT 2").fetchall()
                self.assertEqual(runs, [("ok", 2), ("ok", 2)])
                errors = con.execute("SELECT error_type FROM agent_attempts WHERE attempt = 1 AND run_id IN "
                                     "(SELECT id FROM agent_runs ORDER BY id DESC LIMIT 2) ORDER BY run_id").fetchall()
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


# The package's own code, as the wheel carries it (its library is loaded
# here from the build, by path).
sys.path.insert(0, os.path.join(SOURCE_DIR, "packaging", "python"))
import querypilot  # noqa: E402

# Quotes of both kinds, newlines, a parenthesis and what would end the
# statement: all of it is the question.
AWKWARD = ("How many orders did O'Brien's \"best\" customers place?\n"
           "'); DROP TABLE orders; --\n(all of them)")


class AnswerTableHelperTest(LLMTestCase):
    def connect(self, client):
        """A connection of `client` (sqlite3 or apsw) with QueryPilot loaded
        and pointed at the scripted model, and a function running SQL on it."""
        if client == "apsw":
            install_apsw(sys.executable)  # python3-apsw, or a skip saying why
            import apsw
            con = apsw.Connection(self.db)
            con.enableloadextension(True)
            con.loadextension(EXTENSION)
            con.enableloadextension(False)
        else:
            con = sqlite3.connect(self.db)
            con.enable_load_extension(True)
            con.load_extension(EXTENSION)
            con.enable_load_extension(False)
        self.addCleanup(con.close)

        def run(sql, params=()):
            return [tuple(r) for r in con.cursor().execute(sql, params)]
        for key, value in (("provider", "openai"), ("base_url", self.llm.base + "/v1"), ("model", "scripted-model")):
            run("SELECT agent_config(?, ?)", (key, value))
        return con, run

    def test_a_question_with_quotes_and_newlines_arrives_as_given(self):
        for client in ("sqlite3", "apsw"):
            with self.subTest(client=client):
                self.llm.load({"rules": [{"match": "O'Brien", "replies": [sql_reply("SELECT COUNT(*) AS n FROM orders")]}]})
                con, run = self.connect(client)
                table = querypilot.answer_table(con, 'answers "by" country', AWKWARD)
                self.assertEqual(table, 'temp."answers ""by"" country"')
                self.assertEqual(run("SELECT * FROM " + table), [(100,)])
                self.assertEqual(run("SELECT name FROM pragma_table_list WHERE schema = 'temp' AND name LIKE 'answers%'"),
                                 [('answers "by" country',)])
                self.assertEqual(run("SELECT question FROM agent_runs ORDER BY id DESC LIMIT 1"), [(AWKWARD,)])
                sent = self.llm.log()[-1]["body"]["messages"][-1]["content"]
                self.assertIn(AWKWARD, sent)
                self.assertEqual(run("SELECT COUNT(*) FROM orders"), [(100,)])

    def test_what_is_not_a_question_is_refused_before_sql(self):
        self.llm.load({"rules": []})
        con, run = self.connect("sqlite3")
        for name, question, error in (("t", None, TypeError), ("t", 42, TypeError), (None, "q", TypeError),
                                      ("t", "a\0b", ValueError)):
            with self.subTest(name=name, question=question):
                with self.assertRaises(error):
                    querypilot.answer_table(con, name, question)
        self.assertEqual(run("SELECT COUNT(*) FROM agent_runs"), [(0,)])
        self.assertEqual(self.llm.log(), [])


if __name__ == "__main__":
    unittest.main()
