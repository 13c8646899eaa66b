"""Nothing the model's SQL runs reaches a file through a function: the
program SQLite compiles a query into may call only SQLite's own functions
(and those the user names in allow_functions), whether the query calls them
itself or through a view, TEMP or not; and a view may not read a table that
reaches outside the database (the shell's fsdir). In the sqlite3 shell (its
writefile, readfile, fsdir), Python's sqlite3 (a function of the
application's that writes a file) and npm's better-sqlite3."""
import json
import os
import shutil
import sqlite3
import subprocess
import unittest

from harness import (EXTENSION, SOURCE_DIR, LLMTestCase, ShellError, connect, file_digest, install_node_clients,
                     sql_reply)

SANITIZED = bool(os.environ.get("QP_SANITIZE"))


class ShellFunctionsTest(LLMTestCase):
    def ask_through_view(self, view_sql, reply_sql, *more):
        statements = ["CREATE TEMP VIEW v AS %s" % view_sql,
                      "SELECT * FROM ask('What does v hold?')",
                      "SELECT status, error_type, error FROM agent_runs"] + list(more)
        script = {"rules": [{"match": "What does v hold", "replies": [sql_reply(reply_sql)]}]}
        return self.session(statements, script)

    def test_a_temp_view_calling_writefile_cannot_overwrite_the_database(self):
        before = file_digest(self.db)
        out = self.ask_through_view("SELECT writefile('%s', 'x') AS w" % self.db, "SELECT * FROM v")
        self.assertIsInstance(out[1], ShellError)
        self.assertIn("writefile()", out[1])
        self.assertEqual(out[2][0]["status"], "refused", out[2])
        self.assertIn("the function writefile() is not allowed", out[2][0]["error"])
        self.assertEqual(file_digest(self.db), before)
        with sqlite3.connect(self.db) as con:
            self.assertEqual(con.execute("SELECT count(*) FROM orders").fetchone(), (100,))

    def test_a_temp_view_calling_readfile_returns_nothing_of_the_file(self):
        secret = os.path.join(self.tmp, "secret.txt")
        with open(secret, "w") as f:
            f.write("top secret")
        out = self.ask_through_view("SELECT readfile('%s') AS r" % secret, "SELECT CAST(r AS TEXT) AS r FROM v")
        self.assertIsInstance(out[1], ShellError)
        self.assertIn("readfile()", out[1])
        self.assertNotIn("top secret", json.dumps(out))

    def test_a_temp_view_over_fsdir_lists_no_folder(self):
        out = self.ask_through_view("SELECT name FROM fsdir('%s')" % self.tmp, "SELECT name FROM v")
        self.assertIsInstance(out[1], ShellError)
        self.assertIn("fsdir", out[1])
        self.assertEqual(out[2][0]["status"], "refused", out[2])

    def test_a_view_of_main_calling_writefile_is_refused_too(self):
        stray = os.path.join(self.tmp, "stray.txt")
        with sqlite3.connect(self.db) as con:
            con.execute("CREATE VIEW w AS SELECT id, writefile('%s', 'x') AS n FROM orders" % stray)
        out = self.session(["SELECT * FROM ask('What does w hold?')"],
                           {"rules": [{"match": "What does w hold",
                                       "replies": [sql_reply("SELECT count(n) AS n FROM w")]}]})
        self.assertIsInstance(out[0], ShellError)
        self.assertIn("writefile()", out[0])
        self.assertFalse(os.path.exists(stray))

    def test_a_function_the_user_allows_runs(self):
        # sha3() is the shell's; named in allow_functions, generated SQL may call it.
        script = {"rules": [{"match": "hash", "replies": [sql_reply("SELECT hex(sha3('abc')) AS h")]}]}
        out = self.session(["SELECT * FROM ask('The hash of abc?')",
                            "SELECT agent_config('allow_functions', 'sha3')",
                            "SELECT * FROM ask('The hash of abc, again?')",
                            "SELECT agent_config('allow_functions', 'not a name!')"], script)
        self.assertIsInstance(out[0], ShellError)
        self.assertIn("the function sha3() is not allowed", out[0])
        self.assertIn("allow_functions", out[0])
        self.assertEqual(len(out[2]), 1, out[2])
        self.assertEqual(json.loads(out[2][0]["row"]),
                         {"h": "3A985DA74FE225B2045C172D6BD390BD855F086E3E9D525B46BFE24511431532"})
        self.assertIsInstance(out[3], ShellError)
        self.assertIn("allow_functions", out[3])

    def test_sqlites_own_functions_run(self):
        sql = ("SELECT upper(substr(name, 1, 3)) AS n, round(avg(price), 1) AS p, "
               "json_object('c', count(*)) AS j, group_concat(id) IS NOT NULL AS g, "
               "date('2024-01-01', '+1 day') AS d, row_number() OVER () AS r, sqrt(4) AS s "
               "FROM products GROUP BY 1 LIMIT 1")
        out = self.session(["SELECT * FROM ask('Some figures?')", "SELECT status FROM agent_runs"],
                           {"rules": [{"match": "figures", "replies": [sql_reply(sql)]}]})
        self.assertNotIsInstance(out[0], ShellError, out)
        self.assertEqual(out[1], [{"status": "ok"}])


class PythonFunctionsTest(LLMTestCase):
    def setUp(self):
        super().setUp()
        self.leak = os.path.join(self.tmp, "leak.txt")
        self.con = connect(self.db, self.llm.env())
        self.addCleanup(self.con.close)

        def leak(x):
            with open(self.leak, "a") as f:
                f.write(str(x))
            return x
        self.con.create_function("leak", 1, leak)

    def ask(self, reply_sql):
        self.llm.load({"rules": [{"match": "Anything", "replies": [sql_reply(reply_sql)]}]})
        try:
            return self.con.execute("SELECT row FROM ask('Anything?')").fetchall()
        except sqlite3.Error as e:
            return e

    def test_an_applications_function_is_refused_directly_and_through_views(self):
        self.con.execute("CREATE TEMP VIEW tv AS SELECT leak(name) AS x FROM customers")
        self.con.execute("CREATE VIEW mv AS SELECT leak(email) AS x FROM customers")
        self.con.commit()
        for sql in ("SELECT leak(name) AS x FROM customers", "SELECT x FROM tv",
                    "WITH c AS (SELECT x FROM mv) SELECT count(x) AS n FROM c",
                    "SELECT (SELECT max(leak(id)) FROM orders) AS n"):
            with self.subTest(sql=sql):
                got = self.ask(sql)
                self.assertIsInstance(got, sqlite3.Error)
                self.assertIn("the function leak() is not allowed", str(got))
        self.assertFalse(os.path.exists(self.leak))

    def test_a_function_of_the_applications_under_a_builtins_name_is_refused(self):
        self.con.create_function("upper", 1, lambda x: (open(self.leak, "a").write("u"), x)[1])
        got = self.ask("SELECT upper(name) AS x FROM customers LIMIT 1")
        self.assertIsInstance(got, sqlite3.Error)
        self.assertIn("upper()", str(got))
        self.assertFalse(os.path.exists(self.leak))

    def test_allow_functions_lets_it_run(self):
        self.con.execute("SELECT agent_config('allow_functions', 'leak')").fetchall()
        got = self.ask("SELECT leak(name) AS x FROM customers ORDER BY id LIMIT 1")
        self.assertNotIsInstance(got, sqlite3.Error, got)
        self.assertEqual(len(got), 1)
        self.assertTrue(os.path.exists(self.leak))


@unittest.skipIf(SANITIZED, "Node.js clients run in the Release suite: under a sanitizer build node "
                            "itself would run with the sanitizer runtime preloaded")
class NodeFunctionsTest(LLMTestCase):
    @classmethod
    def setUpClass(cls):
        cls.modules = install_node_clients()

    def test_better_sqlite3_an_applications_function_is_refused(self):
        leak = os.path.join(self.tmp, "leak.txt")
        self.llm.load({"rules": [{"match": "Anything", "replies": [sql_reply("SELECT x FROM tv")]}]})
        env = self.llm.env()
        env.pop("LD_PRELOAD", None)
        env["NODE_PATH"] = self.modules
        env["QP_LEAK_FILE"] = leak
        script = os.path.join(SOURCE_DIR, "tests", "clients", "node_client.js")
        statements = ["CREATE TEMP VIEW tv AS SELECT leak(name) AS x FROM customers",
                      "SELECT row FROM ask('Anything?')"]
        p = subprocess.run([shutil.which("node"), script, "better-sqlite3", self.db, EXTENSION,
                            json.dumps(statements)], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        out = [json.loads(line) for line in p.stdout.splitlines()]
        self.assertEqual(out[0], {"done": True})
        self.assertIn("the function leak() is not allowed", out[1].get("error", ""), out)
        self.assertFalse(os.path.exists(leak))


if __name__ == "__main__":
    unittest.main()
