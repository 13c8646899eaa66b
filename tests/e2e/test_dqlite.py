"""QueryPilot where extensions cannot be loaded, and on a dqlite cluster.

PreloadTest: libquerypilot_preload.so registers QueryPilot as an automatic
extension in a program that never calls sqlite3_load_extension (Python's
sqlite3 module, the sqlite3 shell), and never in the connections QueryPilot
opens for itself.

DqliteClusterTest: three nodes of Debian's dqlite-demo on 127.0.0.1, each
with the preload (dqlite's VFS has no xDlOpen), and the scripted model
answering after DELAY_MS. The synchronous ask() holds the leader's one loop
for the model's latency, so a write sent to another node waits for it; the
asynchronous ask (ask_start / ask_result) does not; killing the leader
mid-ask gives a clear error on the new leader, never a hang. The figures with
an 8 s model are bench/dqlite_stall.py's.
"""
import os
import statistics
import subprocess
import sys
import threading
import time
import unittest

from harness import BUILD_DIR, EXTENSION, SQLITE3, ScriptedLLM, built_version, isolated_env, sql_reply
from dqlite_cluster import PRELOAD, Cluster, Session, install_dqlite

AUTO_HOST = os.path.join(BUILD_DIR, "auto_host")
QUESTION = "How many keys are stored?"
COUNT_SQL = "SELECT count(*) AS n FROM model"


def preload_env(env):
    env = dict(env)
    env["LD_PRELOAD"] = " ".join(p for p in (os.environ.get("LD_PRELOAD", ""), PRELOAD) if p)
    return env


class PreloadTest(unittest.TestCase):
    def setUp(self):
        if not os.path.exists(PRELOAD):
            self.fail("the build has no %s" % PRELOAD)

    def python(self, code, env=None):
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                              env=preload_env(env or isolated_env()))

    def test_python_without_load_extension_has_querypilot(self):
        p = self.python("import sqlite3\n"
                        "con = sqlite3.connect(':memory:')\n"
                        "print(con.execute('SELECT querypilot_version()').fetchone()[0])\n"
                        "print(con.execute(\"SELECT count(*) FROM pragma_function_list WHERE name = 'ask_sql'\")"
                        ".fetchone()[0])\n")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.split()
        self.assertEqual(lines[0], built_version())
        self.assertEqual(lines[1], "1")
        self.assertEqual(p.stderr, "")

    def test_without_the_preload_python_has_no_querypilot(self):
        # The yardstick for the test above: the function is the preload's doing.
        p = subprocess.run([sys.executable, "-c", "import sqlite3\n"
                            "sqlite3.connect(':memory:').execute('SELECT querypilot_version()')"],
                           capture_output=True, text=True, timeout=120, env=isolated_env())
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("no such function: querypilot_version", p.stderr)

    def test_sqlite3_shell_asks_through_the_preload(self):
        llm = ScriptedLLM({"rules": [{"match": "", "replies": [sql_reply("SELECT 6 * 7 AS answer")]}]})
        self.addCleanup(llm.close)
        p = subprocess.run([SQLITE3, ":memory:", "SELECT row FROM ask('What is six times seven?');"],
                           capture_output=True, text=True, timeout=120, env=preload_env(llm.env()))
        self.assertEqual((p.returncode, p.stdout.strip(), p.stderr), (0, '{"answer":42}', ""))

    def test_python_asks_through_the_preload(self):
        llm = ScriptedLLM({"rules": [{"match": "", "replies": [sql_reply("SELECT count(*) AS n FROM t")]}]})
        self.addCleanup(llm.close)
        code = ("import sqlite3\n"
                "con = sqlite3.connect(':memory:')\n"
                "con.execute('CREATE TABLE t(x)')\n"
                "print(con.execute(\"SELECT row FROM ask('How many rows?')\").fetchone()[0])\n")
        p = self.python(code, llm.env())
        self.assertEqual((p.returncode, p.stdout.strip()), (0, '{"n":0}'), p.stderr)

    # What a connection gives before any call of QueryPilot's: opened, one
    # statement that reads no table, one that reads the schema.
    OPEN_AND_READ = ("import sqlite3, sys\n"
                     "try:\n"
                     "    con = sqlite3.connect(sys.argv[1], timeout=0)\n"
                     "except sqlite3.Error as e:\n"
                     "    sys.exit('open: %s' % e)\n"
                     "print('opened')\n"
                     "for sql in ('SELECT 1', 'SELECT count(*) FROM sqlite_master'):\n"
                     "    try:\n"
                     "        print(con.execute(sql).fetchall())\n"
                     "    except sqlite3.Error as e:\n"
                     "        print(e)\n")

    def open_and_read(self, path, preload):
        env = preload_env(isolated_env()) if preload else isolated_env()
        p = subprocess.run([sys.executable, "-c", self.OPEN_AND_READ, path], capture_output=True, text=True,
                           timeout=120, env=env)
        return p.returncode, p.stdout, p.stderr

    def test_opening_a_file_that_is_not_a_database_is_as_without_the_preload(self):
        # Nothing QueryPilot does as a connection opens reads its file: the
        # open succeeds, and what reads the file fails, as without QueryPilot.
        import hashlib
        import shutil
        import tempfile
        tmp = tempfile.mkdtemp(prefix="qp-preload-notadb-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "notes.txt")
        with open(path, "w") as f:
            f.write("These are notes, not a database.\n" * 64)
        with open(path, "rb") as f:
            before = hashlib.sha256(f.read()).hexdigest()
        without = self.open_and_read(path, preload=False)
        self.assertEqual(without, (0, "opened\n[(1,)]\nfile is not a database\n", ""))
        self.assertEqual(self.open_and_read(path, preload=True), without)
        # The sqlite3 shell too.
        for env in (isolated_env(), preload_env(isolated_env())):
            p = subprocess.run([SQLITE3, path, "SELECT 6 * 7;"], capture_output=True, text=True, timeout=120,
                               env=env)
            self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "42\n", ""))
        with open(path, "rb") as f:
            self.assertEqual(hashlib.sha256(f.read()).hexdigest(), before)

    def test_opening_a_database_another_connection_holds_locked_is_as_without_the_preload(self):
        # An exclusive lock of another connection: the open succeeds, the
        # first read of the file says it is locked.
        import shutil
        import sqlite3
        import tempfile
        tmp = tempfile.mkdtemp(prefix="qp-preload-locked-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "shop.db")
        holder = sqlite3.connect(path, isolation_level=None)
        self.addCleanup(holder.close)
        holder.execute("CREATE TABLE t(x)")
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("INSERT INTO t VALUES (1)")
        without = self.open_and_read(path, preload=False)
        self.assertEqual(without, (0, "opened\n[(1,)]\ndatabase is locked\n", ""))
        self.assertEqual(self.open_and_read(path, preload=True), without)
        holder.execute("COMMIT")
        # Its temp.ask (where ask is found, so that an asking statement holds
        # no lock on main) is made at the connection's first call of
        # QueryPilot's, before that call does anything else.
        code = ("import sqlite3, sys\n"
                "con = sqlite3.connect(sys.argv[1])\n"
                "temp = 'SELECT name FROM sqlite_temp_master'\n"
                "print(con.execute(temp).fetchall())\n"
                "print(con.execute(\"SELECT agent_config('max_rows')\").fetchall())\n"
                "print(con.execute(temp).fetchall())\n")
        p = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, timeout=120,
                           env=preload_env(isolated_env()))
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "[]\n[(10000,)]\n[('ask',)]\n", ""))

    def test_c_host_registers_querypilot_with_sqlite3_auto_extension(self):
        # What a host that can call SQLite does instead of the preload.
        p = subprocess.run([AUTO_HOST, ":memory:", EXTENSION + ".so", "SELECT querypilot_version() IS NOT NULL",
                            "SELECT json_extract(agent_config('host'), '$.threads')"],
                           capture_output=True, text=True, timeout=120, env=isolated_env())
        self.assertEqual((p.returncode, p.stdout.split(), p.stderr), (0, ["1", "1"], ""))

    def test_querypilot_is_not_registered_in_the_connections_it_opens_itself(self):
        # SQLite runs an automatic extension in every connection it opens,
        # QueryPilot's own too (its history file's, its value index's, its
        # read and check connections). Registered there, each would hold a
        # session of its own, and a session registers its connection's files
        # as a host's: the history file and the value index file would then be
        # a database of another connection, which the own-file checks refuse.
        import shutil
        import tempfile
        tmp = tempfile.mkdtemp(prefix="qp-auto-own-")
        self.addCleanup(shutil.rmtree, tmp, True)
        db = os.path.join(tmp, "shop.db")
        subprocess.run([SQLITE3, db, "CREATE TABLE t(x TEXT); INSERT INTO t VALUES ('a'), ('b');"], check=True)
        llm = ScriptedLLM({"rules": [{"match": "", "replies": [sql_reply("SELECT count(*) AS n FROM t")]}]})
        self.addCleanup(llm.close)
        history, index = os.path.join(tmp, "history.db"), os.path.join(tmp, "index.db")
        p = subprocess.run([AUTO_HOST, db, EXTENSION + ".so",
                            "SELECT agent_config('history_file', '%s')" % history,
                            "SELECT agent_config('value_index_file', '%s')" % index,
                            "SELECT row FROM ask('How many rows?')",
                            "SELECT json_extract(agent_index(), '$[0].index_file')",
                            "SELECT count(*) FROM agent_runs"],
                           capture_output=True, text=True, timeout=120, env=llm.env())
        self.assertEqual((p.returncode, p.stdout.splitlines(), p.stderr),
                         (0, [history, index, '{"n":2}', index, "1"], ""))
        # The run is in the history file, read by a connection with no QueryPilot.
        p = subprocess.run([SQLITE3, history, "SELECT count(*) FROM querypilot_runs"], capture_output=True, text=True,
                           timeout=60, env=isolated_env())
        self.assertEqual((p.stdout, p.stderr), ("1\n", ""))

    def test_single_thread_sqlite_keeps_querypilot_on_the_asking_thread(self):
        # SQLITE_CONFIG_SINGLETHREAD (go-dqlite sets it) turns SQLite's
        # mutexes off at run time, which sqlite3_threadsafe() does not tell:
        # QueryPilot then reads nothing from a thread of its own.
        p = subprocess.run([AUTO_HOST, "--single-thread", ":memory:", EXTENSION + ".so",
                            "SELECT json_extract(agent_config('host'), '$.threads')"],
                           capture_output=True, text=True, timeout=120, env=isolated_env())
        self.assertEqual((p.returncode, p.stdout.split(), p.stderr), (0, ["0"], ""))

    def test_installed_beside_querypilot_so_and_found_there(self):
        # `cmake --install` (the .deb's files) puts the preload beside
        # querypilot.so; the preload finds querypilot.so in its own folder.
        import shutil
        import tempfile
        stage = tempfile.mkdtemp(prefix="qp-preload-install-")
        self.addCleanup(shutil.rmtree, stage, True)
        subprocess.run(["cmake", "--install", BUILD_DIR, "--prefix", "/usr", "--component", "extension"],
                       check=True, capture_output=True, env=dict(os.environ, DESTDIR=stage), timeout=300)
        libdir = os.path.join(stage, "usr", "lib")
        preload = os.path.join(libdir, "libquerypilot_preload.so")
        self.assertTrue(os.path.exists(preload), os.listdir(libdir))
        env = isolated_env()
        env["LD_PRELOAD"] = " ".join(p for p in (os.environ.get("LD_PRELOAD", ""), preload) if p)
        p = subprocess.run([sys.executable, "-c", "import sqlite3\n"
                            "print(sqlite3.connect(':memory:').execute('SELECT querypilot_version()').fetchone()[0])"],
                           capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertRegex(p.stdout.strip(), r"^\d+\.\d+\.\d+")

    def test_a_missing_extension_is_said_and_the_program_runs_on(self):
        # The preload alone, without querypilot.so beside it or on the
        # loader's path: one line on stderr, SQLite works as before.
        import shutil
        import tempfile
        folder = tempfile.mkdtemp(prefix="qp-preload-")
        self.addCleanup(shutil.rmtree, folder, True)
        lone = os.path.join(folder, "libquerypilot_preload.so")
        shutil.copy(PRELOAD, lone)
        env = isolated_env()
        env.pop("LD_LIBRARY_PATH", None)
        env["LD_PRELOAD"] = " ".join(p for p in (os.environ.get("LD_PRELOAD", ""), lone) if p)
        p = subprocess.run([sys.executable, "-c", "import sqlite3\n"
                            "print(sqlite3.connect(':memory:').execute('SELECT 1').fetchone()[0])"],
                           capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "1"), p.stderr)
        self.assertIn("querypilot_preload: QueryPilot not registered", p.stderr)


class DqliteClusterTest(unittest.TestCase):
    # The model's latency: long enough that a stall is told from a write's
    # usual latency on a busy machine, short enough for CI and below Raft's
    # election timeout (with an 8 s model the leader, its loop held by ask(),
    # sends no heartbeat and loses its leadership: bench/dqlite_stall.py).
    DELAY_MS = 2000

    @classmethod
    def setUpClass(cls):
        install_dqlite()
        if not os.path.exists(PRELOAD):
            raise AssertionError("the build has no %s" % PRELOAD)
        cls.llm = ScriptedLLM()
        try:
            cls.cluster = Cluster(cls.llm.env(QUERYPILOT_ANSWER_CACHE="0"))
        except BaseException:
            cls.llm.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.cluster.close()
        cls.llm.close()

    def setUp(self):
        self.answer_after(self.DELAY_MS)

    def answer_after(self, delay_ms):
        self.llm.load({"rules": [{"match": "", "replies": [{"content": sql_reply(COUNT_SQL),
                                                             "delay_ms": delay_ms}]}]})

    def wait_until_answered(self, session, run):
        """Polls ask_state without waiting in the statement: a wait in
        ask_result would hold the leader's loop as ask() does."""
        deadline = time.time() + 120
        while True:
            state = session.run("SELECT ask_state(%d)" % run)
            if state != "pending":
                return state
            if time.time() > deadline:
                self.fail("run %d still pending after 120 s" % run)
            time.sleep(0.1)

    def wait_for_request(self, n=1):
        deadline = time.time() + 60
        while len(self.llm.log()) < n:
            if time.time() > deadline:
                self.fail("the model was never asked:\n" + self.cluster.logs())
            time.sleep(0.02)

    def keys(self):
        return int(self.cluster.shell("SELECT count(*) FROM model"))

    def async_ask(self, session):
        out = session.run("SELECT ask_start('%s')" % QUESTION)
        self.assertRegex(out, r"^\d+$", out)
        return int(out)

    def test_ask_answers_on_the_leader_without_load_extension(self):
        # dqlite's VFS has no xDlOpen and its connections never enable
        # loading: QueryPilot is in the leader's connections all the same.
        self.answer_after(0)
        self.assertRegex(self.cluster.shell("SELECT querypilot_version()"), r"^\d+\.\d+\.\d+")
        self.assertEqual(self.cluster.shell("SELECT row FROM ask('%s')" % QUESTION), '{"n":%d}' % self.keys())
        with self.assertRaises(RuntimeError):
            self.cluster.shell("SELECT load_extension('%s')" % EXTENSION)
        # go-dqlite runs SQLite without mutexes: QueryPilot uses no thread
        # of its own there.
        self.assertEqual(self.cluster.shell("SELECT json_extract(agent_config('host'), '$.threads')"), "0")

    def test_sync_ask_answers_and_holds_writes_to_another_node_for_the_model(self):
        # The model holds its reply for DELAY_MS after the write is sent: the
        # write must still be waiting then, however fast or slow the machine.
        self.llm.load({"rules": [{"match": "", "replies": [{"content": sql_reply(COUNT_SQL), "hold": True}]}]})
        result = {}
        other = self.not_leader()

        def ask():
            start = time.monotonic()
            try:
                result["rows"] = self.cluster.shell("SELECT row FROM ask('%s')" % QUESTION)
            except RuntimeError as e:  # the leader lost its leadership meanwhile
                result["rows"] = str(e).splitlines()[0]
            result["took"] = time.monotonic() - start

        def write():
            result["write"] = self.cluster.put("during-sync-ask", "x", node=other)
        t = threading.Thread(target=ask)
        t.start()
        self.wait_for_request()
        w = threading.Thread(target=write)
        w.start()
        w.join(self.DELAY_MS / 1000.0)
        write_waited = w.is_alive()
        self.llm.release()
        t.join(120)
        w.join(120)
        self.assertFalse(t.is_alive(), "the synchronous ask never returned")
        self.assertFalse(w.is_alive(), "the write never returned")
        # Its answer, or (on a machine slow enough for the leader's loop to
        # miss Raft's election timeout) the connection lost with the leadership.
        self.assertIn(result["rows"], ('{"n":%d}' % (self.keys() - 1), "Error: commit: driver: bad connection"))
        print("\nsynchronous ask: %.2f s; a write sent to another node meanwhile: %.2f s (the model held its "
              "reply %.1f s after the write was sent)" % (result["took"], result["write"], self.DELAY_MS / 1000.0))
        self.assertTrue(write_waited, "the write ended while the model held its reply: the ask did not hold it")

    def not_leader(self):
        leader = self.cluster.leader()
        return next(n for n in self.cluster.nodes if n is not leader and n.proc.poll() is None)

    def test_async_ask_keeps_writes_at_their_usual_latency_and_answers_through_ask_result(self):
        other = self.not_leader()
        baseline = [self.cluster.put("baseline-%d" % i, "x", node=other) for i in range(5)]
        session = Session(self.cluster)
        self.addCleanup(session.close)
        # The model holds its reply until the writes are done: an ask that
        # held the leader's loop would hold them until then, and each write
        # gives up after 30 s (QueryPilot's own request timeout is 60 s).
        self.llm.load({"rules": [{"match": "", "replies": [{"content": sql_reply(COUNT_SQL), "hold": True}]}]})
        run = self.async_ask(session)
        self.wait_for_request()
        writes = [self.cluster.put("during-async-ask-%d" % i, "x", node=other, timeout=30) for i in range(5)]
        pending = session.run("SELECT ask_state(%d)" % run)
        self.llm.release()
        # The model has answered; its SQL runs when ask_result asks for it.
        # Read without waiting (a wait would hold the leader's loop), the
        # answer then goes to its review (`review`, on by default) and the run
        # is pending again: polled until ready once more, it gives its rows.
        for _ in range(3):
            self.assertIn(self.wait_until_answered(session, run), ("ready", "done"))
            rows = session.run("SELECT row FROM ask_result(%d)" % run)
            if not rows.startswith("Error") or session.run("SELECT ask_state(%d)" % run) not in ("pending", "ready"):
                break
        print("\nwrites before the ask: median %.3f s, slowest %.3f s; during the asynchronous ask (the model "
              "holding its reply): median %.3f s, slowest %.3f s"
              % (statistics.median(baseline), max(baseline), statistics.median(writes), max(writes)))
        self.assertEqual(pending, "pending")
        # The count is taken when the answer's SQL runs, after the writes.
        self.assertEqual(rows, '{"n":%d}' % self.keys())
        # That the five writes were done while the model held its reply (the
        # run still pending) is the proof that the ask held none of them;
        # their latencies are printed above and measured by
        # bench/dqlite_stall.py, never bounded here.

    def test_z_killing_the_leader_mid_ask_gives_a_clear_error_on_the_new_leader(self):
        # Last (test_z_): the cluster goes on with two nodes.
        session = Session(self.cluster)
        self.addCleanup(session.close)
        run = self.async_ask(session)
        self.wait_for_request()
        old = self.cluster.leader()
        self.cluster.kill(old)
        self.cluster.wait_for_leader()
        self.assertIsNot(self.cluster.leader(), old)
        # Debian's dqlite 1.11 hands the client an error raised while a
        # statement steps with the result column's name for its message
        # (docs/beyond-one-machine.md): what is checked here is that both
        # fail at once, with no rows and no state; the messages themselves
        # (an unknown run) are the asynchronous ask's own tests'.
        for sql in ("SELECT row FROM ask_result(%d)" % run, "SELECT ask_state(%d)" % run):
            start = time.monotonic()
            try:
                out = self.cluster.shell(sql, timeout=120)
            except RuntimeError as e:
                out = "error: %s" % e
            except subprocess.TimeoutExpired:
                self.fail("%s on the new leader hung" % sql)
            print("\n%s on the new leader: %r after %.2f s" % (sql, out, time.monotonic() - start))
            self.assertTrue(out.startswith("error: "), out)
            self.assertNotIn("{", out)
            self.assertNotIn("pending", out)


if __name__ == "__main__":
    unittest.main()
