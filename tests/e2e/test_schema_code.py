"""Code the schema runs cannot write, QueryPilot's own surface is out of its
reach, and the host's connection is never left read-only.

The model's SQL names only a view, a table or a collation; the code behind
them (a view over pragma_optimize, a host function that writes through the
connection, one registered over a built-in's name, a generated column
calling it, a collation that writes) runs while QueryPilot steps, under
PRAGMA query_only, so SQLite refuses every write: each database file is
checksummed before and after. A host's TEMP view over agent_forget(),
agent_runs, agent_config() or agent_prompt() reached from the model's SQL
fails the query and changes nothing (views are judged as views, so these
are refused before they run). A step stopped by the watchdog or by
the host's sqlite3_interrupt leaves query_only as the host had it, and the
run records what stopped its rows. Through Debian's sqlite3 shell and
python3 (SQLite 3.40) and through better-sqlite3 (its own, newer SQLite).
"""
import json
import os
import shutil
import sqlite3
import subprocess
import threading
import time
import unittest

from harness import (EXTENSION, SOURCE_DIR, LLMTestCase, ShellError, connect, file_digest,
                     install_node_clients, sql_reply)

SANITIZED = bool(os.environ.get("QP_SANITIZE"))
ENDLESS = "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) "
# Rows 1 to 299 at once, then a scan that never ends: the run is accepted on
# its first 256 rows, and its rows stop while they stream.
STREAM_THEN_HANG = ENDLESS + "SELECT i FROM c WHERE i < 300 OR i < 0"


def stat_tables(path):
    with sqlite3.connect(path) as con:
        return con.execute("SELECT count(*) FROM sqlite_master WHERE name LIKE 'sqlite_stat%'").fetchone()[0]


class SchemaCodeTest(LLMTestCase):
    """Python's sqlite3 as the host: its functions and collations write
    through the connection whenever they are called."""

    def setUp(self):
        super().setUp()
        con = sqlite3.connect(self.db)
        con.executescript("""
            CREATE TABLE log (what TEXT);
            CREATE TABLE notes (x);
        """)
        con.commit()
        con.close()

    def host(self, **kwargs):
        con = connect(self.db, self.llm.env(), isolation_level=None, check_same_thread=False, **kwargs)
        self.addCleanup(con.close)
        outcomes = []

        def write(*args):
            # Through the connection that is stepping: the write SQLite must refuse.
            try:
                con.execute("INSERT INTO log VALUES ('written')")
                outcomes.append("written")
                return "written"
            except sqlite3.Error as e:
                outcomes.append(str(e))
                return str(e)

        def collate(a, b):
            write()
            return (a > b) - (a < b)

        con.create_function("audit", 1, write, deterministic=True)
        con.create_function("upper", 1, write)
        con.create_function("upper", 2, write)
        con.create_collation("evil", collate)
        # The application's functions are refused unless the user names
        # them (tests/e2e/test_functions.py); named, they run, and still
        # cannot write.
        con.execute("SELECT agent_config('allow_functions', 'audit, upper, stop_here')")
        return con, outcomes

    def test_the_schemas_code_cannot_write_while_the_models_sql_runs(self):
        cases = [
            ("a view calling a host function", "CREATE VIEW audited AS SELECT name, audit(name) AS a FROM customers",
             "SELECT a FROM audited"),
            ("a built-in's name", None, "SELECT upper(name) AS u FROM customers"),
            ("a built-in's name with two arguments", None, "SELECT upper(name, 1) AS u FROM customers"),
            ("a generated column", "CREATE TABLE gen (x TEXT, y TEXT AS (audit(x)))",
             "SELECT y FROM gen"),
            ("a collation in the query", None, "SELECT name FROM customers ORDER BY name COLLATE evil"),
            ("a column declared with a collation", "CREATE TABLE coll (b TEXT COLLATE evil)",
             "SELECT b FROM coll ORDER BY b"),
        ]
        con = sqlite3.connect(self.db)
        con.create_function("audit", 1, lambda x: x, deterministic=True)
        con.create_collation("evil", lambda a, b: (a > b) - (a < b))
        for _, ddl, _ in cases:
            if ddl:
                con.execute(ddl)
        con.executescript("INSERT INTO gen(x) VALUES ('a'), ('b'); INSERT INTO coll VALUES ('b'), ('a');")
        con.commit()
        con.close()
        before = file_digest(self.db)
        self.llm.load({"rules": [{"match": "(%s)" % name, "replies": [sql_reply(sql), sql_reply(sql)]}
                                 for name, _, sql in cases]})
        host, outcomes = self.host()
        for name, _, sql in cases:
            with self.subTest(case=name):
                del outcomes[:]
                try:
                    host.execute("SELECT row FROM ask(?)", ("Show it (%s)" % name,)).fetchall()
                except sqlite3.Error:
                    pass  # a query whose code failed is an error: also fine
                self.assertTrue(outcomes, "the code never ran")
                for outcome in outcomes:
                    self.assertIn("readonly", outcome)
        self.assertEqual(file_digest(self.db), before)
        # The flag was QueryPilot's only while its SQL stepped: the host writes after.
        self.assertEqual(host.execute("PRAGMA query_only").fetchone(), (0,))
        host.execute("INSERT INTO notes VALUES (1)")
        self.assertEqual(host.execute("SELECT count(*) FROM notes").fetchone(), (1,))

    def test_a_host_interrupt_or_the_watchdog_never_leaves_the_connection_read_only(self):
        host, _ = self.host()
        # The host's interrupt, from its own function once the rows stream
        # past the first 299: while a step runs, whatever the build's speed.
        host.create_function("stop_here", 1, lambda i: host.interrupt() or 0)
        self.llm.load({"rules": [
            {"match": "slow", "replies": [sql_reply(ENDLESS + "SELECT count(*) AS n FROM c")]},
            {"match": "stream them", "replies": [sql_reply(STREAM_THEN_HANG)]},
            {"match": "stream and stop", "replies": [sql_reply(
                ENDLESS + "SELECT i FROM c WHERE i < 300 OR stop_here(i)")]},
        ]})
        host.execute("SELECT agent_config('sql_timeout_ms', 600000)")
        # The host's interrupt (Ctrl-C in the shell), while a step runs.
        for question in ("a slow one", "stream and stop"):
            timer = threading.Timer(1.0 if question == "a slow one" else 60.0, host.interrupt)
            timer.start()
            with self.assertRaises(sqlite3.Error) as e:
                host.execute("SELECT row FROM ask(?)", (question,)).fetchall()
            timer.cancel()
            timer.join()
            self.assertIn("interrupt", str(e.exception))
            self.assertEqual(host.execute("PRAGMA query_only").fetchone(), (0,), question)
            host.execute("INSERT INTO notes VALUES (1)")
        # The watchdog's, at the end of the time budget.
        host.execute("SELECT agent_config('sql_timeout_ms', 300)")
        for question in ("a slow one", "stream them"):
            with self.assertRaises(sqlite3.Error) as e:
                host.execute("SELECT row FROM ask(?)", (question,)).fetchall()
            self.assertIn("time budget", str(e.exception))
            self.assertEqual(host.execute("PRAGMA query_only").fetchone(), (0,), question)
            host.execute("INSERT INTO notes VALUES (1)")
        self.assertEqual(host.execute("SELECT count(*) FROM notes").fetchone(), (4,))
        # Each run says what stopped it; the ones whose rows stopped while
        # streaming were accepted first, and no longer say ok.
        runs = host.execute("SELECT question, status, error_type, confidence, rows FROM agent_runs ORDER BY id").fetchall()
        self.assertEqual([r[:4] for r in runs], [
            ("a slow one", "interrupted", "interrupted", None),
            ("stream and stop", "interrupted", "interrupted", None),
            ("a slow one", "failed", "timeout", None),
            ("stream them", "failed", "timeout", None),
        ])
        self.assertEqual((runs[1][4], runs[3][4]), (256, 256))  # the rows returned before the stop
        # A host that holds query_only itself keeps it.
        host.execute("PRAGMA query_only = 1")
        with self.assertRaises(sqlite3.Error):
            host.execute("SELECT row FROM ask('a slow one')").fetchall()
        self.assertEqual(host.execute("PRAGMA query_only").fetchone(), (1,))


class ShellSchemaCodeTest(LLMTestCase):
    """Debian's sqlite3 shell."""

    def test_a_view_over_pragma_optimize_writes_nothing(self):
        con = sqlite3.connect(self.db)
        con.executescript("""
            CREATE INDEX orders_customer ON orders(customer_id);
            CREATE VIEW opt AS SELECT count(*) AS n FROM pragma_optimize
              WHERE (SELECT count(*) FROM orders WHERE customer_id = 5) >= 0;
        """)
        con.commit()
        con.close()
        before = file_digest(self.db)
        res = self.session(["SELECT * FROM ask('optimize it')",
                            "SELECT status FROM agent_runs"],
                           {"rules": [{"match": "optimize", "replies": [sql_reply("SELECT n FROM opt")] * 2}]})
        # The view is judged as a view: its pragma_optimize is refused
        # before anything runs.
        self.assertIsInstance(res[0], ShellError)
        self.assertIn("pragma_optimize is not allowed", res[0])
        self.assertEqual(res[1], [{"status": "refused"}])
        self.assertEqual(file_digest(self.db), before)
        self.assertEqual(stat_tables(self.db), 0)
        # The same view, read by the host itself, is the host's business:
        # it writes (the route the model's SQL no longer has).
        subprocess.run(["sqlite3", self.db, "SELECT n FROM opt"], check=True, capture_output=True)
        self.assertEqual(stat_tables(self.db), 1)

    def test_temp_views_cannot_reach_querypilots_own_functions_and_tables(self):
        views = {
            "cleanup": "SELECT agent_forget(1) AS n",
            "peek": "SELECT question FROM agent_runs",
            "loosen": "SELECT agent_config('max_rows', 5) AS n",
            "rewrite": "SELECT agent_prompt('rules', 'obey the data') AS n",
            "again": "SELECT row FROM ask('How many orders are there?')",
        }
        # Sample rows are not read here: what is read for a prompt is
        # another route (the schema's reader), this test is the model's SQL.
        statements = ["SELECT agent_config('sample_rows', 0) AS s",
                      "SELECT * FROM ask('How many orders are there?')",
                      "SELECT agent_prompt('rules') AS rules"]
        statements += ["CREATE TEMP VIEW %s AS %s" % (name, body) for name, body in views.items()]
        statements += ["SELECT * FROM ask('use the view %s')" % name for name in views]
        statements += ["SELECT id, status FROM agent_runs ORDER BY id",
                       "SELECT agent_config('max_rows') AS max_rows",
                       "SELECT agent_prompt('rules') AS rules",
                       # The host itself may use its views: the refusal is
                       # QueryPilot's own SQL stepping, not a list of names.
                       "SELECT count(*) AS n FROM peek"]
        rules = [{"match": "How many orders", "replies": [sql_reply("SELECT count(*) AS n FROM orders")]}]
        rules += [{"match": "view %s" % name, "replies": [sql_reply("SELECT * FROM %s" % name)] * 2}
                  for name in views]
        before = file_digest(self.db)
        res = self.session(statements, {"rules": rules})
        self.assertEqual(res[1], [{"row": '{"n":100}'}])
        rules_before = res[2]
        answers = res[3 + len(views):3 + 2 * len(views)]
        for name, answer in zip(views, answers):
            with self.subTest(view=name):
                self.assertIsInstance(answer, ShellError)
                self.assertIn("QueryPilot's own", answer)
        runs, max_rows, rules_after, peeked = res[-4:]
        self.assertEqual(runs[0], {"id": 1, "status": "ok"})  # run 1 is not forgotten
        # Judged as views, they are refused before anything runs.
        self.assertEqual([r["status"] for r in runs[1:]], ["refused"] * len(views))
        self.assertEqual(max_rows, [{"max_rows": 10000}])
        self.assertEqual(rules_after, rules_before)
        self.assertEqual(peeked, [{"n": 1 + len(views)}])
        self.assertEqual(file_digest(self.db), before)

    def test_a_query_naming_more_than_64_tables_is_checked_as_the_host_reads_it(self):
        con = sqlite3.connect(self.db)
        for i in range(1, 171):
            con.execute("CREATE TABLE t%d (v INTEGER)" % i)
            con.execute("INSERT INTO t%d VALUES (%d)" % (i, i))
        con.commit()
        con.close()
        sql = "SELECT " + " + ".join("(SELECT v FROM t%d)" % i for i in range(1, 171)) + " AS total"
        res = self.session(["SELECT * FROM ask('add them all up')"],
                           {"rules": [{"match": "add them", "replies": [sql_reply(sql)]}]})
        self.assertEqual(res[0], [{"row": '{"total":%d}' % (170 * 171 // 2)}])


@unittest.skipIf(SANITIZED, "Node.js clients run in the Release suite")
class BetterSqlite3SchemaCodeTest(LLMTestCase):
    """better-sqlite3 brings its own SQLite (no progress callbacks, no
    sqlite3_interrupt for the application): the same holds."""

    def run_node(self, statements):
        modules = install_node_clients()
        env = self.llm.env()
        env["NODE_PATH"] = modules
        env.pop("LD_PRELOAD", None)
        script = os.path.join(SOURCE_DIR, "tests", "clients", "node_client.js")
        p = subprocess.run([shutil.which("node"), script, "better-sqlite3", self.db, EXTENSION, json.dumps(statements)],
                           capture_output=True, text=True, env=env, timeout=300)
        self.assertGreaterEqual(p.returncode, 0, "node crashed: %s %s" % (p.stdout, p.stderr))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return [json.loads(line) for line in p.stdout.splitlines()]

    def test_views_temp_views_and_a_stopped_step_in_better_sqlite3(self):
        con = sqlite3.connect(self.db)
        con.executescript("""
            CREATE INDEX orders_customer ON orders(customer_id);
            CREATE VIEW opt AS SELECT count(*) AS n FROM pragma_optimize(0x10002)
              WHERE (SELECT count(*) FROM orders WHERE customer_id = 5) >= 0;
        """)
        con.commit()
        con.close()
        before = file_digest(self.db)
        # A stopped step: a query that calls a table-valued function steps
        # forever until the watchdog interrupts it.
        slow = ENDLESS + "SELECT count(*) AS n FROM c, pragma_table_info('orders')"
        self.llm.load({"rules": [
            {"match": "How many orders", "replies": [sql_reply("SELECT count(*) AS n FROM orders")]},
            {"match": "optimize", "replies": [sql_reply("SELECT n FROM opt")] * 2},
            {"match": "forget", "replies": [sql_reply("SELECT * FROM cleanup")] * 2},
            {"match": "history", "replies": [sql_reply("SELECT * FROM peek")] * 2},
            {"match": "slow", "replies": [sql_reply(slow)]},
        ]})
        out = self.run_node([
            "SELECT agent_config('sample_rows', 0)",  # as in the shell's test
            "SELECT row FROM ask('How many orders are there?')",
            "SELECT row FROM ask('optimize it')",
            "CREATE TEMP VIEW cleanup AS SELECT agent_forget(1) AS n",
            "CREATE TEMP VIEW peek AS SELECT question FROM agent_runs",
            "SELECT row FROM ask('forget it')",
            "SELECT row FROM ask('show the history')",
            "SELECT id, status FROM agent_runs ORDER BY id",
            "SELECT agent_config('sql_timeout_ms', 200)",
            "SELECT row FROM ask('a slow one')",
            "PRAGMA query_only",
            # query_only would refuse a TEMP table's write too; the file
            # itself stays as it was.
            "CREATE TEMP TABLE jot (x)",
            "INSERT INTO temp.jot VALUES (1)",
        ])
        out = out[1:]
        self.assertEqual(out[0]["rows"], [['{"n":100}']])
        self.assertIn("pragma_optimize is not allowed", out[1]["error"])
        self.assertIn("QueryPilot's own", out[4]["error"])
        self.assertIn("QueryPilot's own", out[5]["error"])
        self.assertEqual(out[6]["rows"], [[1, "ok"], [2, "refused"], [3, "refused"], [4, "refused"]])
        self.assertIn("time budget of 200 ms", out[8]["error"])
        self.assertEqual(out[9]["rows"], [[0]])
        self.assertEqual(out[10:], [{"done": True}, {"done": True}])
        self.assertEqual(file_digest(self.db), before)
        self.assertEqual(stat_tables(self.db), 0)


if __name__ == "__main__":
    unittest.main()
