"""The history of a database file, kept by default and shared by every
process: runs, attempts and verdicts asked in one sqlite3 session are there in
the next with no setting; two processes asking at once number their runs apart
and keep each other's; agent_forget removes the run it names and no other; the
history file keeps at most max_history_runs runs, the oldest dropped. Each
process is a real one (the sqlite3 shell, or a Python process holding its
connection open), each with the scripted model on 127.0.0.1."""
import glob
import json
import os
import sqlite3
import stat
import subprocess
import sys
import unittest

from harness import EXTENSION, LLMTestCase, ShellError, file_digest, sql_reply

COUNT_SQL = "SELECT COUNT(*) AS n FROM orders"
REVENUE_SQL = "SELECT SUM(price) AS revenue FROM products"
SCRIPT = {"rules": [
    {"match": "orders are there", "replies": [sql_reply(COUNT_SQL)]},
    {"match": "revenue", "replies": [sql_reply(REVENUE_SQL)]},
    {"match": "products are there", "replies": [sql_reply("SELECT COUNT(*) AS n FROM products")]}]}

# A process holding one connection open, running a statement per line it
# reads and printing its rows (or its error) as one line of JSON.
PROCESS = r"""
import json, sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.enable_load_extension(True)
con.load_extension(sys.argv[2])
print("ready", flush=True)
for line in sys.stdin:
    try:
        cur = con.execute(line)
        names = [d[0] for d in cur.description or []]
        out = {"rows": [dict(zip(names, r)) for r in cur.fetchall()]}
    except sqlite3.Error as e:
        out = {"error": str(e)}
    print(json.dumps(out), flush=True)
"""


class Process:
    """Another process with a connection to `db` open until closed."""

    def __init__(self, db, env):
        self.proc = subprocess.Popen([sys.executable, "-c", PROCESS, db, EXTENSION], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            self.close()
            raise AssertionError("the process did not load QueryPilot: %r" % line)

    def run(self, sql):
        """The rows `sql` gave, as dicts; an AssertionError with its error."""
        self.proc.stdin.write(sql.replace("\n", " ") + "\n")
        self.proc.stdin.flush()
        out = json.loads(self.proc.stdout.readline())
        if "error" in out:
            raise AssertionError("%s: %s" % (sql, out["error"]))
        return out["rows"]

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        self.proc.stdout.close()


class SharedHistoryTest(LLMTestCase):
    def history_files(self):
        return glob.glob(os.path.join(os.environ["XDG_CACHE_HOME"], "querypilot", "history", "*"))

    def process(self, **env):
        self.llm.load(SCRIPT)
        p = Process(self.db, self.llm.env(**env))
        self.addCleanup(p.close)
        return p

    def file_runs(self, path):
        con = sqlite3.connect(path)
        try:
            return (con.execute("SELECT group_concat(id) FROM (SELECT id FROM querypilot_runs ORDER BY id)").fetchone()[0],
                    con.execute("SELECT group_concat(run_id) FROM "
                                "(SELECT run_id FROM querypilot_attempts ORDER BY run_id)").fetchone()[0])
        finally:
            con.close()

    def test_a_run_of_one_session_is_in_the_next_with_no_setting(self):
        before = file_digest(self.db)
        first = self.session(["SELECT * FROM ask('How many orders are there?')",
                              "SELECT agent_feedback(1, 'good') AS v"], SCRIPT)
        self.assertEqual(first[1], [{"v": "good"}])
        second = self.session(["SELECT id, question, feedback, not_kept FROM agent_runs",
                               "SELECT run_id, attempt FROM agent_attempts",
                               "SELECT agent_config('history_file') AS f"], SCRIPT)
        self.assertEqual(second[0], [{"id": 1, "question": "How many orders are there?", "feedback": "good",
                                      "not_kept": None}])
        self.assertEqual(second[1], [{"run_id": 1, "attempt": 1}])
        # In a folder of QueryPilot's own under the cache folder, private to
        # the user; nothing beside the database, and the database unchanged.
        files = [f for f in self.history_files() if f.endswith(".qphistory")]
        self.assertEqual(len(files), 1, self.history_files())
        self.assertEqual(second[2], [{"f": os.path.realpath(files[0])}])
        self.assertTrue(os.path.basename(files[0]).startswith("shop.db-"))
        folder = os.path.dirname(files[0])
        self.assertEqual(stat.S_IMODE(os.stat(folder).st_mode), 0o700)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["shop.db"])
        self.assertEqual(file_digest(self.db), before)
        self.assertEqual(self.file_runs(files[0]), ("1", "1"))

    def test_the_variable_and_the_setting_name_another_file_or_none(self):
        path = os.path.join(self.tmp, "mine.history")
        self.session(["SELECT * FROM ask('How many orders are there?')"], SCRIPT, QUERYPILOT_HISTORY_FILE=path)
        self.assertEqual(self.file_runs(path), ("1", "1"))
        self.assertEqual(self.history_files(), [])
        again = self.session(["SELECT id FROM agent_runs"], SCRIPT, QUERYPILOT_HISTORY_FILE=path)
        self.assertEqual(again[0], [{"id": 1}])
        # Off: memory only, no file made anywhere.
        off = self.session(["SELECT * FROM ask('What is the revenue?')",
                            "SELECT id FROM agent_runs",
                            "SELECT agent_config('history_file') AS f"], SCRIPT, QUERYPILOT_HISTORY_FILE="off")
        self.assertEqual(off[1], [{"id": 1}])
        self.assertEqual(off[2], [{"f": "off"}])
        set_off = self.session(["SELECT agent_config('history_file', 'off')",
                                "SELECT * FROM ask('What is the revenue?')",
                                "SELECT count(*) AS n FROM agent_runs"], SCRIPT)
        self.assertEqual(set_off[2], [{"n": 1}])
        self.assertEqual(self.history_files(), [])
        self.assertEqual(self.file_runs(path), ("1", "1"))

    def test_a_link_at_its_name_is_removed_and_a_folder_open_to_others_is_not_used(self):
        self.session(["SELECT * FROM ask('How many orders are there?')"], SCRIPT)
        path = [f for f in self.history_files() if f.endswith(".qphistory")][0]
        # A symbolic link where the history file was: the name goes, never
        # what it points at.
        outside = os.path.join(self.tmp, "outside.txt")
        with open(outside, "w") as f:
            f.write("not QueryPilot's")
        os.remove(path)
        os.symlink(outside, path)
        res = self.session(["SELECT * FROM ask('What is the revenue?')",
                            "SELECT id, not_kept FROM agent_runs"], SCRIPT)
        self.assertNotIsInstance(res[0], ShellError, res[0])
        self.assertFalse(os.path.islink(path))
        with open(outside) as f:
            self.assertEqual(f.read(), "not QueryPilot's")
        self.assertEqual(res[1], [{"id": 1, "not_kept": None}])
        # A folder QueryPilot did not make (open to others): nothing is
        # written there, and each run says why it lasts only as long as the
        # connection.
        folder = os.path.dirname(path)
        os.chmod(folder, 0o755)
        before = sorted(os.listdir(folder))
        res = self.session(["SELECT * FROM ask('How many products are there?')",
                            "SELECT id, not_kept FROM agent_runs"], SCRIPT)
        self.assertNotIsInstance(res[0], ShellError, res[0])
        self.assertEqual(len(res[1]), 1)
        self.assertIn("no history file keeps this run (the default history file: the folder", res[1][0]["not_kept"])
        self.assertIn("is open to others", res[1][0]["not_kept"])
        self.assertEqual(sorted(os.listdir(folder)), before)
        self.assertEqual(self.file_runs(path), ("1", "1"))

    def test_a_memory_database_keeps_its_history_in_memory(self):
        self.llm.load(SCRIPT)
        from harness import session
        res = session(":memory:", ["CREATE TABLE orders(id INTEGER PRIMARY KEY)",
                                   "SELECT * FROM ask('How many orders are there?')",
                                   "SELECT id FROM agent_runs",
                                   "SELECT agent_config('history_file') AS f"], self.llm.env())
        self.assertEqual(res[2], [{"id": 1}])
        self.assertEqual(res[3], [{"f": ""}])
        self.assertEqual(self.history_files(), [])

    def test_two_processes_number_their_runs_apart_and_keep_each_others(self):
        p1, p2 = self.process(), self.process()
        # Both have read the history before either asks.
        self.assertEqual(p1.run("SELECT count(*) AS n FROM agent_runs"), [{"n": 0}])
        self.assertEqual(p2.run("SELECT count(*) AS n FROM agent_runs"), [{"n": 0}])
        asked = [p.run("SELECT run_id FROM ask('%s')" % q)[0]["run_id"]
                 for p, q in ((p1, "How many orders are there?"), (p2, "What is the revenue?"),
                              (p1, "How many products are there?"))]
        self.assertEqual(asked, [1, 2, 3])
        # Each sees every run, none written over, at its next call.
        for p in (p1, p2):
            runs = p.run("SELECT id, not_kept FROM agent_runs")
            self.assertEqual(runs, [{"id": 1, "not_kept": None}, {"id": 2, "not_kept": None},
                                    {"id": 3, "not_kept": None}])
        p1.close()
        p2.close()
        third = self.session(["SELECT id, question, status FROM agent_runs",
                              "SELECT run_id FROM agent_attempts"], SCRIPT)
        self.assertEqual(third[0], [
            {"id": 1, "question": "How many orders are there?", "status": "ok"},
            {"id": 2, "question": "What is the revenue?", "status": "ok"},
            {"id": 3, "question": "How many products are there?", "status": "ok"}])
        self.assertEqual(third[1], [{"run_id": 1}, {"run_id": 2}, {"run_id": 3}])

    def test_what_one_process_records_the_other_sees_at_its_next_call(self):
        p1, p2 = self.process(), self.process()
        p1.run("SELECT count(*) FROM agent_runs")
        p2.run("SELECT count(*) FROM agent_runs")
        p1.run("SELECT row FROM ask('How many orders are there?')")
        # Asked in p1 after p2 read the file: p2 sees it, and marks it good.
        self.assertEqual(p2.run("SELECT id, question FROM agent_runs"),
                         [{"id": 1, "question": "How many orders are there?"}])
        self.assertEqual(p2.run("SELECT agent_feedback(1, 'good') AS v"), [{"v": "good"}])
        self.assertEqual(p1.run("SELECT feedback FROM agent_runs WHERE id = 1"), [{"feedback": "good"}])
        # It teaches p2's next question.
        p2.run("SELECT row FROM ask('How many orders are there in all?')")
        self.assertEqual(p2.run("SELECT id, examples FROM agent_runs WHERE id = 2"), [{"id": 2, "examples": "[1]"}])
        self.assertEqual(p2.run("SELECT run_id FROM agent_attempts"), [{"run_id": 1}, {"run_id": 2}])
        # Forgotten in p1: gone from p2 too.
        self.assertEqual(p1.run("SELECT agent_forget(1) AS f"), [{"f": 1}])
        self.assertEqual(p2.run("SELECT id FROM agent_runs"), [{"id": 2}])

    def test_agent_forget_removes_the_run_it_names_and_no_other(self):
        p1, p2 = self.process(), self.process()
        p1.run("SELECT count(*) FROM agent_runs")
        p2.run("SELECT count(*) FROM agent_runs")
        p1.run("SELECT row FROM ask('How many orders are there?')")
        p2.run("SELECT row FROM ask('What is the revenue?')")
        self.assertEqual(p2.run("SELECT id FROM agent_runs"), [{"id": 1}, {"id": 2}])
        self.assertEqual(p2.run("SELECT agent_forget(2) AS f"), [{"f": 2}])
        self.assertEqual(p1.run("SELECT id FROM agent_runs"), [{"id": 1}])
        p1.close()
        p2.close()
        files = self.history_files()
        after = self.session(["SELECT question FROM agent_runs"], SCRIPT)
        self.assertEqual(after[0], [{"question": "How many orders are there?"}])
        self.assertEqual(self.file_runs([f for f in files if f.endswith(".qphistory")][0]), ("1", "1"))

    def test_the_history_keeps_at_most_max_history_runs_the_oldest_dropped(self):
        for question in ("How many orders are there?", "What is the revenue?", "How many products are there?"):
            res = self.session(["SELECT * FROM ask('%s')" % question], SCRIPT, QUERYPILOT_MAX_HISTORY_RUNS="2")
            self.assertNotIsInstance(res[0], ShellError, res[0])
        after = self.session(["SELECT id, question FROM agent_runs",
                              "SELECT run_id FROM agent_attempts",
                              "SELECT agent_config('max_history_runs') AS m"], SCRIPT, QUERYPILOT_MAX_HISTORY_RUNS="2")
        self.assertEqual(after[0], [{"id": 2, "question": "What is the revenue?"},
                                    {"id": 3, "question": "How many products are there?"}])
        self.assertEqual(after[1], [{"run_id": 2}, {"run_id": 3}])
        self.assertEqual(after[2], [{"m": 2}])
        files = [f for f in self.history_files() if f.endswith(".qphistory")]
        self.assertEqual(self.file_runs(files[0]), ("2,3", "2,3"))
        # The setting too, on the connection: the next run kept drops the oldest.
        last = self.session(["SELECT agent_config('max_history_runs', 1)",
                             "SELECT * FROM ask('How many orders are there?')"], SCRIPT)
        self.assertNotIsInstance(last[1], ShellError, last[1])
        self.assertEqual(self.file_runs(files[0]), ("4", "4"))


if __name__ == "__main__":
    unittest.main()
