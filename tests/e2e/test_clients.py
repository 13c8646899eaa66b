"""QueryPilot in the clients people use, and in SQLite builds that leave
routines out: never a crash of the host, the host's own progress handler left
in place, and the time budget either enforced or said to be impossible.

- Python's sqlite3 (Debian's python3), with a progress handler of its own;
- sqlite-utils (Debian's), with --load-extension;
- SQLite hosts compiled from an amalgamation with the SQLITE_OMIT_* options
  real clients use (better-sqlite3 omits progress callbacks);
- Node.js with npm's better-sqlite3 (its own SQLite) and libsql (libSQL's
  embedded engine), installed into a test folder; skipped, saying why, where
  npm cannot install them.
"""
import hashlib
import json
import os
import shutil
import subprocess
import time
import unittest

from harness import (CLIENTS_DIR, EXTENSION, SOURCE_DIR, TIMED, LLMTestCase, connect, install_node_clients,
                     sql_reply)

SANITIZED = bool(os.environ.get("QP_SANITIZE"))
ENDLESS = "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT count(*) AS n FROM c"
COUNT = "SELECT COUNT(*) AS n FROM orders"
SCRIPT = {"rules": [
    {"match": "How many orders", "replies": [sql_reply(COUNT)]},
    {"match": "slow", "replies": [sql_reply(ENDLESS), sql_reply(COUNT)]},
]}


def clean_env(env=None):
    """`env` (default: this process's) without a preloaded sanitizer runtime,
    for the compilers and package managers the tests run."""
    env = dict(os.environ if env is None else env)
    env.pop("LD_PRELOAD", None)
    return env


class PythonHostTest(LLMTestCase):
    def setUp(self):
        super().setUp()
        self.llm.load(SCRIPT)
        self.con = connect(self.db, self.llm.env())
        self.addCleanup(self.con.close)

    def test_the_hosts_progress_handler_stays_in_place(self):
        calls = []
        # Every 10 instructions: the ask reads the schema on a connection of
        # its own, so what runs on this one is little more than its query.
        self.con.set_progress_handler(lambda: calls.append(1) and 0, 10)
        rows = self.con.execute("SELECT row FROM ask('How many orders are there?')").fetchall()
        self.assertEqual(rows, [('{"n":100}',)])
        after_ask = len(calls)
        self.assertGreater(after_ask, 0)  # it saw the ask's own SQL run
        self.con.execute("SELECT count(*) FROM orders a, orders b").fetchall()
        self.assertGreater(len(calls), after_ask)  # and is still installed

    def test_the_hosts_progress_handler_can_stop_an_ask(self):
        # A web application's own time limit, as Datasette sets one: it stops
        # the ask's query, and the run says it was interrupted.
        self.con.execute("SELECT agent_config('sql_timeout_ms', 600000)")
        self.con.set_progress_handler(lambda: 1, 10000)
        with self.assertRaises(Exception) as e:
            self.con.execute("SELECT row FROM ask('a slow one')").fetchall()
        self.assertIn("interrupt", str(e.exception))
        self.con.set_progress_handler(None, 0)
        self.assertEqual(self.con.execute("SELECT status FROM agent_runs").fetchall(), [("interrupted",)])

    def test_a_query_past_its_budget_ends_the_ask_with_a_clear_error(self):
        self.con.execute("SELECT agent_config('sql_timeout_ms', 200)")
        started = time.monotonic()
        with self.assertRaises(Exception) as e:
            self.con.execute("SELECT row FROM ask('a slow one')").fetchall()
        elapsed = time.monotonic() - started
        self.assertIn("time budget of 200 ms", str(e.exception))
        self.assertIn("sqlite3_interrupt", str(e.exception))
        run = self.con.execute("SELECT status, error_type, attempts, llm_calls FROM agent_runs").fetchall()
        self.assertEqual(run, [("failed", "timeout", 1, 1)])  # no correction could run
        # The connection works again once the statement that asked has ended.
        self.assertEqual(self.con.execute("SELECT count(*) FROM orders").fetchall(), [(100,)])
        # The query never ends by itself (a wide bound: CI's machine is busy).
        if TIMED:
            self.assertLess(elapsed, 15.0)

    def test_with_progress_handler_1_a_slow_query_is_corrected(self):
        self.con.execute("SELECT agent_config('sql_timeout_ms', 200)")
        self.con.execute("SELECT agent_config('progress_handler', 1)")
        rows = self.con.execute("SELECT row FROM ask('a slow one')").fetchall()
        self.assertEqual(rows, [('{"n":100}',)])
        attempts = self.con.execute("SELECT attempt, error_type FROM agent_attempts ORDER BY attempt").fetchall()
        self.assertEqual(attempts, [(1, "timeout"), (2, None)])

    def test_agent_config_says_what_the_host_gives(self):
        host = json.loads(self.con.execute("SELECT agent_config('host')").fetchone()[0])
        self.assertEqual(host["progress_handler"], True)
        self.assertEqual(host["authorizer"], True)
        self.assertIn("sqlite3_interrupt", host["time_budget"])
        self.assertEqual(json.loads(self.con.execute("SELECT agent_config()").fetchone()[0])["host"], host)
        with self.assertRaises(Exception) as e:
            self.con.execute("SELECT agent_config('host', 'x')")
        self.assertIn("read-only", str(e.exception))


@unittest.skipIf(not shutil.which("sqlite-utils"), "sqlite-utils is not installed (scripts/install-deps.sh installs it)")
class SqliteUtilsTest(LLMTestCase):
    def test_query_with_load_extension_gives_json_rows(self):
        self.llm.load(SCRIPT)
        p = subprocess.run(["sqlite-utils", "query", self.db, "SELECT row, sql FROM ask('How many orders are there?')",
                            "--load-extension", EXTENSION, "--csv"],
                           capture_output=True, text=True, env=self.llm.env(), timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.splitlines(), ["row,sql", '"{""n"":100}",%s' % COUNT])

    def test_an_ask_that_fails_is_a_clear_error(self):
        self.llm.load(SCRIPT)
        env = self.llm.env(QUERYPILOT_SQL_TIMEOUT_MS="200")
        p = subprocess.run(["sqlite-utils", "query", self.db, "SELECT * FROM ask('a slow one')",
                            "--load-extension", EXTENSION], capture_output=True, text=True, env=env, timeout=120)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("time budget of 200 ms", p.stderr)


# Host builds: the options each leaves out, and what QueryPilot must do there.
OMIT_BUILDS = {
    # better-sqlite3's own options (deps/defines.gypi), the ones that matter here.
    "better-sqlite3": ["-DSQLITE_OMIT_PROGRESS_CALLBACK", "-DSQLITE_OMIT_DEPRECATED",
                       "-DSQLITE_OMIT_SHARED_CACHE", "-DSQLITE_ENABLE_COLUMN_METADATA", "-DSQLITE_THREADSAFE=2",
                       "-DSQLITE_DEFAULT_FOREIGN_KEYS=1", "-DSQLITE_DQS=0"],
    "no-authorizer": ["-DSQLITE_OMIT_AUTHORIZATION"],
    "no-decltype-no-metadata": ["-DSQLITE_OMIT_DECLTYPE", "-DSQLITE_OMIT_TRACE", "-DSQLITE_OMIT_GET_TABLE"],
}


class OmitBuildTest(LLMTestCase):
    """SQLite hosts built with SQLITE_OMIT_* options from the amalgamation
    better-sqlite3 ships (tests/hosts/omit_host.c)."""

    @classmethod
    def setUpClass(cls):
        modules = install_node_clients()
        cls.amalgamation = os.path.join(modules, "better-sqlite3", "deps", "sqlite3")
        if not os.path.exists(os.path.join(cls.amalgamation, "sqlite3.c")):
            raise unittest.SkipTest("no SQLite amalgamation in %s" % cls.amalgamation)
        cls.hosts = {}
        out = os.path.join(CLIENTS_DIR, "hosts")
        os.makedirs(out, exist_ok=True)
        source = os.path.join(SOURCE_DIR, "tests", "hosts", "omit_host.c")
        with open(source, "rb") as f:
            program = f.read()
        with open(os.path.join(cls.amalgamation, "sqlite3.h"), "rb") as f:
            header = f.read()
        for name, flags in OMIT_BUILDS.items():
            # Named by what it is built from, so a cached host is reused only
            # when the program, the SQLite and the options are the same.
            key = hashlib.sha256(program + header + " ".join(flags).encode()).hexdigest()[:16]
            path = os.path.join(out, "%s-%s" % (name, key))
            if not os.path.exists(path):
                tmp = "%s.%d.tmp" % (path, os.getpid())
                subprocess.run(["cc", "-O1", "-w", *flags, "-I", cls.amalgamation, source,
                                os.path.join(cls.amalgamation, "sqlite3.c"), "-o", tmp,
                                "-lm", "-ldl", "-lpthread"], check=True, env=clean_env(), timeout=600)
                os.replace(tmp, path)
            cls.hosts[name] = path

    def run_host(self, name, *statements):
        self.llm.load(SCRIPT)
        p = subprocess.run([self.hosts[name], self.db, EXTENSION, *statements], capture_output=True,
                           text=True, env=self.llm.env(), timeout=120)
        # A negative code is a signal: the host crashed.
        self.assertGreaterEqual(p.returncode, 0, "%s crashed: %s %s" % (name, p.stdout, p.stderr))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return p.stdout.splitlines()

    def test_without_progress_callbacks_the_budget_holds(self):
        out = self.run_host("better-sqlite3",
                            "SELECT * FROM ask('How many orders are there?')",
                            "SELECT agent_config('sql_timeout_ms', 200)",
                            "SELECT * FROM ask('a slow one')",
                            "SELECT agent_config('progress_handler', 1)",
                            "SELECT count(*) FROM orders",
                            "SELECT json_extract(agent_config('host'), '$.progress_handler')")
        self.assertEqual(out[0], '{"n":100}')
        self.assertIn("time budget of 200 ms", out[2])
        self.assertIn("SQLITE_OMIT_PROGRESS_CALLBACK", out[3])
        self.assertEqual(out[4:], ["100", "0"])

    def test_without_an_authorizer_no_generated_sql_runs(self):
        out = self.run_host("no-authorizer",
                            "SELECT * FROM ask('How many orders are there?')",
                            "SELECT count(*) FROM agent_runs",
                            "SELECT count(*) FROM orders")
        self.assertIn("SQLITE_OMIT_AUTHORIZATION", out[0])
        self.assertEqual(out[1:], ["0", "100"])
        self.assertEqual(self.llm.log(), [])  # the model was never asked

    def test_without_decltype_or_column_metadata_answers_come_back(self):
        out = self.run_host("no-decltype-no-metadata",
                            "SELECT * FROM ask('How many orders are there?')",
                            "SELECT json_extract(agent_config('host'), '$.column_metadata')")
        self.assertEqual(out, ['{"n":100}', "0"])


@unittest.skipIf(SANITIZED, "Node.js clients run in the Release suite: under a sanitizer build node "
                            "itself would run with the sanitizer runtime preloaded")
class NodeClientTest(LLMTestCase):
    @classmethod
    def setUpClass(cls):
        cls.modules = install_node_clients()

    def run_node(self, module, statements):
        self.llm.load(SCRIPT)
        env = clean_env(self.llm.env())
        env["NODE_PATH"] = self.modules
        script = os.path.join(SOURCE_DIR, "tests", "clients", "node_client.js")
        p = subprocess.run([shutil.which("node"), script, module, self.db, EXTENSION, json.dumps(statements)],
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertGreaterEqual(p.returncode, 0, "node crashed with %s: %s %s" % (module, p.stdout, p.stderr))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return [json.loads(line) for line in p.stdout.splitlines()]

    def test_each_client_gets_answers_real_columns_and_a_bounded_slow_query(self):
        for module in ("better-sqlite3", "libsql"):
            with self.subTest(module=module):
                out = self.run_node(module, [
                    "SELECT row, run_id, sql FROM ask('How many orders are there?')",
                    "SELECT agent_config('sql_timeout_ms', 200)",
                    "SELECT * FROM ask('a slow one')",
                    # This process's two runs: the database's history keeps
                    # the other client's too.
                    "SELECT id, status, error_type FROM agent_runs ORDER BY id DESC LIMIT 2",
                    "CREATE VIRTUAL TABLE temp.t USING ask('How many orders are there?')",
                    "SELECT * FROM t",
                ])
                self.assertEqual(out[0]["columns"], ["row", "run_id", "sql"])
                first = out[0]["rows"][0][1]
                self.assertEqual(out[0]["rows"], [['{"n":100}', first, COUNT]])
                self.assertIn("time budget of 200 ms", out[2]["error"])
                self.assertEqual(out[3]["rows"], [[first + 1, "failed", "timeout"], [first, "ok", None]])
                # An answer table: the answer's own column.
                self.assertEqual(out[4], {"done": True})
                self.assertEqual(out[5], {"columns": ["n"], "rows": [[100]]})


if __name__ == "__main__":
    unittest.main()
