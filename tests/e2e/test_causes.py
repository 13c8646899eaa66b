"""Every error tells its real cause, through the sqlite3 shell: facts about the
database end an ask at once in SQLite's own words; after retries the first
real cause leads. Also: names that are keywords are shown as SQL that runs, a
second .load keeps the connection's state, numbers read back as numbers, and
an explanation that is code is refused."""
import os
import sqlite3
import subprocess

from harness import (EXTENSION, SQLITE3, LLMTestCase, ShellError, file_digest, session, sql_reply)


def corrupt_database(path):
    """A database whose schema reads but one page of its table is garbage,
    as a disk or a bad copy leaves it."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 1024")
    con.execute("CREATE TABLE visits(id INTEGER PRIMARY KEY, page TEXT)")
    con.executemany("INSERT INTO visits(page) VALUES (?)", [("/page/%d" % i * 4,) for i in range(3000)])
    con.commit()
    pages = con.execute("PRAGMA page_count").fetchone()[0]
    con.close()
    with open(path, "r+b") as f:
        f.seek(1024 * (pages // 2))
        f.write(b"\xff" * 1024)


class CauseTest(LLMTestCase):
    def test_a_corrupt_file_ends_the_ask_after_one_model_call_in_sqlites_words(self):
        db = os.path.join(self.tmp, "damaged.db")
        corrupt_database(db)
        before = file_digest(db)
        self.llm.load({"rules": [{"match": "visits", "replies": [
            sql_reply("SELECT count(*), max(page) FROM visits")]}]})
        res = session(db, [
            "SELECT * FROM ask('How many visits were there?')",
            "SELECT status, attempts, llm_calls, error_type FROM agent_runs",
        ], self.llm.env())
        self.assertIsInstance(res[0], ShellError)
        self.assertIn("the database reported database_corrupt: database disk image is malformed", res[0])
        self.assertEqual(res[1], [{"status": "failed", "attempts": 1, "llm_calls": 1,
                                   "error_type": "database_corrupt"}])
        self.assertEqual(len(self.llm.log()), 1)
        self.assertEqual(file_digest(db), before)

    def test_not_a_database_is_said_before_any_model_call(self):
        path = os.path.join(self.tmp, "notes.db")
        with open(path, "wb") as f:
            f.write(b"these are my notes, not a database " * 200)
        self.llm.load({"default": sql_reply("SELECT 1")})
        res = session(path, ["SELECT * FROM ask('How many notes?')"], self.llm.env())
        # SQLite cannot even compile a statement over such a file: its own
        # words reach the user, and no model is asked.
        self.assertIsInstance(res[0], ShellError)
        self.assertIn("file is not a database", res[0])
        self.assertEqual(self.llm.log(), [])

    def test_after_retries_the_first_real_cause_leads(self):
        deep = "SELECT " + "(" * 1500 + "1" + ")" * 1500
        cases = [
            ("nested", deep, "too_complex", "parser stack overflow: the query nests too deeply"),
            ("two statements", "SELECT 1; SELECT 2", "multiple_statements", "more than one statement"),
            ("huge blob", "SELECT zeroblob(2000000000)", "value_too_big", "string or blob too big"),
            ("no function", "SELECT no_such_fn(1)", "function_error", "no such function: no_such_fn"),
        ]
        # The model repeats its query each time: the retry cannot help.
        script = {"rules": [{"match": "(%s)" % name, "replies": [sql_reply(sql)]} for name, sql, _, _ in cases]}
        statements = ["SELECT * FROM ask('How many orders are there? (%s)')" % name for name, _, _, _ in cases]
        statements.append("SELECT attempts, error_type, error FROM agent_runs ORDER BY id")
        res = self.session(statements, script)
        for (name, _, kind, words), answer, run in zip(cases, res, res[-1]):
            self.assertIsInstance(answer, ShellError, name)
            self.assertIn("no working SQL after 2 attempts (%s): " % kind, answer)
            self.assertIn(words, answer)
            self.assertIn("(attempt 1); attempt 2: the model repeated the query of attempt 1", answer)
            self.assertEqual(run["error_type"], kind, name)
            self.assertEqual(run["attempts"], 2)
            self.assertIn(run["error"], answer)


class KeywordNamesTest(LLMTestCase):
    def test_a_schema_of_keyword_and_spaced_names_is_shown_as_sql_that_runs(self):
        db = os.path.join(self.tmp, "club.db")
        con = sqlite3.connect(db)
        con.executescript('''
            CREATE TABLE "order"(id INTEGER PRIMARY KEY, "group" TEXT, "where" INT, "first name" TEXT);
            INSERT INTO "order"("group", "where", "first name") VALUES ('a', 1, 'Ann'), ('a', 2, 'Bo'), ('b', 3, 'Cy');
        ''')
        con.close()
        # What a model copies from the prompt, names as they are shown.
        copied = 'SELECT "group", count(*) AS n FROM "order" WHERE "where" > 1 GROUP BY "group" ORDER BY "group"'
        self.llm.load({"rules": [{"match": "per group", "replies": [sql_reply(copied)]}]})
        res = session(db, ["SELECT * FROM ask('How many orders per group?')"], self.llm.env())
        self.assertEqual(res[0], [{"row": '{"group":"a","n":1}'}, {"row": '{"group":"b","n":1}'}])
        system = self.llm.log()[0]["body"]["messages"][0]["content"]
        self.assertIn('CREATE TABLE "order" (\n  id INTEGER PRIMARY KEY,\n  "group" TEXT,', system)
        self.assertIn('\n  "where" INT,\n  "first name" TEXT\n);', system)
        self.assertIn('sample rows: id | "group" | "where" | "first name"', system)
        self.assertNotIn("CREATE TABLE order ", system)


class ExtensionCitizenTest(LLMTestCase):
    SCRIPT = {"rules": [
        {"match": "Question: How many orders are there?\nSQL:", "replies": [
            "```sql\nSELECT COUNT(*) FROM orders\n```", "SELECT COUNT(*) FROM orders",
            "There are 100 orders in the shop."]},
        {"match": "orders are there", "replies": [sql_reply("SELECT COUNT(*) AS n FROM orders")]},
    ]}

    def test_a_second_load_keeps_the_connections_state(self):
        res = self.session([
            "SELECT agent_config('max_attempts', 5) AS v",
            "SELECT agent_describe('orders', 'one row per order') AS d",
            "SELECT * FROM ask('How many orders are there?')",
            ".load %s" % EXTENSION,
            "SELECT agent_config('max_attempts') AS v",
            "SELECT count(*) AS runs FROM agent_runs",
            "SELECT target FROM agent_descriptions",
        ], self.SCRIPT)
        self.assertEqual(res[3], [])
        self.assertEqual(res[4], [{"v": 5}])
        self.assertEqual(res[5], [{"runs": 1}])
        self.assertEqual(res[6], [{"target": "orders"}])

    def test_settings_read_back_with_their_sql_type(self):
        res = self.session([
            "SELECT typeof(agent_config('max_rows')) AS a, agent_config('max_rows') + 1 AS b, "
            "typeof(agent_config('temperature')) AS c, typeof(agent_config('model')) AS d, "
            "typeof(agent_config('max_attempts', 4)) AS e, typeof(agent_config('max_rows', NULL)) AS f",
        ], self.SCRIPT)
        self.assertEqual(res[0], [{"a": "integer", "b": 10001, "c": "real", "d": "text", "e": "integer",
                                   "f": "integer"}])

    def test_an_explanation_that_is_code_is_refused(self):
        res = self.session([
            "SELECT * FROM ask('How many orders are there?')",
            "SELECT agent_explain(1)",
            "SELECT agent_explain(1)",
            "SELECT explanation FROM agent_runs",
            "SELECT agent_explain(1) AS e",
        ], self.SCRIPT)
        for r in (res[1], res[2]):
            self.assertIsInstance(r, ShellError)
            self.assertIn("the model gave code, not an explanation", r)
        self.assertIn("only a code block", res[1])
        self.assertIn("its reply was SQL", res[2])
        self.assertEqual(res[3], [{"explanation": None}])
        self.assertEqual(res[4], [{"e": "There are 100 orders in the shop."}])
