"""Hostile model replies, hostile data, interruption, bad input and read-only
databases, end to end through the real sqlite3 shell and Python's sqlite3
module against the scripted model on 127.0.0.1."""
import os
import sqlite3
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hardening"))

import corpus  # noqa: E402
import faults  # noqa: E402
from harness import EXTENSION, SQLITE3, LLMTestCase, ShellError, connect, file_digest, sql_reply  # noqa: E402


class CorpusTest(LLMTestCase):
    def test_every_case_is_refused_bounded_or_a_real_read_and_nothing_changes(self):
        cases = corpus.load_corpus()
        self.assertGreaterEqual(len(cases), 50)
        results, summary = corpus.run_corpus(self.llm, self.tmp, cases)
        unexpected = [r for r in results if not r["ok"]]
        self.assertEqual(unexpected, [], corpus.cases_table(results))
        self.assertEqual(summary["crashed"], 0)
        self.assertTrue(summary["db_unchanged"])
        self.assertTrue(summary["usable_after"])
        # Every door is represented.
        doors = {c["door"] for c in cases}
        for door in ("dml", "cte", "ddl", "pragma", "attach", "vacuum", "files", "multi", "resource", "benign"):
            self.assertIn(door, doors)

    def test_instructions_in_the_data_change_nothing_and_the_answer_comes_back(self):
        s = corpus.run_injection(self.llm, self.tmp)
        self.assertTrue(s["injection_in_prompt"], "the test must put the instructions in front of the model")
        self.assertEqual(s["answered"], s["cases"], s)
        self.assertEqual(s["refused"], s["cases"], "each obeyed instruction was refused once")
        self.assertTrue(s["db_unchanged"])
        self.assertFalse(s["key_in_prompt_or_output"])
        self.assertTrue(s["base_url_kept"])
        self.assertEqual(s["crashed"], 0)


class ProviderFaultTest(unittest.TestCase):
    def test_each_fault_is_a_clear_error_or_a_bounded_retry(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            results, summary = faults.run_faults(d)
        self.assertEqual([r for r in results if not r["ok"]], [], faults.faults_table(results))
        self.assertEqual(summary["redirects_followed"], 0)
        self.assertTrue(summary["db_unchanged"])
        self.assertGreaterEqual(summary["cases"], 20)


class InterruptTest(LLMTestCase):
    """sqlite3_interrupt (Ctrl-C in the shell) stops an ask promptly.

    The interrupt comes once the model has the request, so it finds the ask
    in the step under test however slow the machine; what it stops would not
    end by itself (a reply the model holds, an endless query), so an ask that
    ended without being stopped fails. How long stopping takes is measured by
    bench/interrupt.py, not asserted here."""

    def ask_and_interrupt(self, reply, after=0.0):
        self.llm.load({"rules": [{"match": "Count", "replies": [reply]}]})
        con = connect(self.db, self.llm.env(), check_same_thread=False)
        self.addCleanup(con.close)

        def interrupt():
            self.llm.wait_for_requests()
            time.sleep(after)
            con.interrupt()
        interrupter = threading.Thread(target=interrupt)
        interrupter.start()
        with self.assertRaises(sqlite3.OperationalError) as cm:
            con.execute("SELECT * FROM ask('Count the orders')").fetchall()
        interrupter.join()
        run = con.execute("SELECT status, attempts, llm_calls FROM agent_runs").fetchall()
        # The connection works afterwards.
        self.assertEqual(con.execute("SELECT COUNT(*) FROM orders").fetchone(), (100,))
        return str(cm.exception), run

    def test_interrupt_during_the_model_call(self):
        # The model holds its reply: only the interrupt ends the call.
        msg, run = self.ask_and_interrupt({"content": sql_reply("SELECT 1"), "hold": True})
        self.assertIn("interrupted", msg)
        self.assertEqual(run, [("interrupted", 1, 1)])

    def test_interrupt_during_the_query(self):
        # The reply comes at once and its query never ends: 0.3 s after the
        # request the query runs (or, on a slow machine, the reply is still
        # on its way: the run is then interrupted at the same step count).
        forever = "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT MAX(i) FROM c"
        msg, run = self.ask_and_interrupt(sql_reply(forever), after=0.3)
        self.assertIn("interrupted", msg)
        self.assertEqual(run, [("interrupted", 1, 1)])

    def test_ctrl_c_in_the_shell(self):
        self.llm.load({"rules": [{"match": "Count", "replies": [{"content": sql_reply("SELECT 1"), "hold": True}]}]})
        p = subprocess.Popen([SQLITE3, "-batch", self.db], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env=self.llm.env())
        p.stdin.write(".load %s\nSELECT * FROM ask('Count the orders');\nSELECT status FROM agent_runs;\n" % EXTENSION)
        p.stdin.flush()
        self.llm.wait_for_requests()
        p.send_signal(2)  # SIGINT: the shell calls sqlite3_interrupt
        out, _ = p.communicate(timeout=60)
        # (Reading a script, the shell then stops, as it does for any statement.)
        self.assertIn("ask(): interrupted", out)


class StreamInterruptTest(LLMTestCase):
    """An interrupt while an answer's rows stream (max_rows 0, an answer with
    no end) ends its run as interrupted, with the rows the statement that
    read them returned and no confidence, wherever among the rows it comes:
    in the rows the first run read, inside a batch read later, at a batch's
    end. For ask(), an answer table's scan and ask_result alike.

    The host function counted() counts the rows the reading statement
    returned (SQLite calls it once per row it returns), whatever Python's
    cursor fetches ahead. The interrupt comes from another thread between two
    fetches, so no step depends on how fast the machine is."""

    FOREVER = "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT i FROM c"
    # Python's cursor has read one row more than it handed on: these put
    # the interrupt in the rows the run read first (256), at the end of one
    # of them or of a batch read later (256 each), and inside such a batch.
    FETCHED = (100, 255, 300, 511)

    def setUp(self):
        super().setUp()
        self.llm.load({"default": sql_reply(self.FOREVER)})
        self.con = connect(self.db, self.llm.env(), check_same_thread=False)
        self.addCleanup(self.con.close)
        self.con.execute("SELECT agent_config('max_rows', 0)")
        self.returned = 0

        def counted(value):
            self.returned += 1
            return value
        self.con.create_function("counted", 1, counted)

    def read_then_interrupt(self, sql, fetched, *args):
        self.returned = 0
        cur = self.con.execute(sql, args)
        for _ in range(fetched):
            self.assertIsNotNone(cur.fetchone())
        interrupter = threading.Thread(target=self.con.interrupt)
        interrupter.start()
        interrupter.join()
        with self.assertRaises(sqlite3.OperationalError) as cm:
            cur.fetchall()
        self.assertIn("interrupt", str(cm.exception))
        self.assertGreater(self.returned, fetched)
        # The connection works afterwards.
        self.assertEqual(self.con.execute("SELECT count(*) FROM orders").fetchone(), (100,))
        return self.returned

    def run_record(self, run_id):
        return self.con.execute("SELECT status, rows, confidence, confidence_reason, error_type FROM agent_runs "
                                "WHERE id = ?", (run_id,)).fetchone()

    def last_run(self):
        return self.con.execute("SELECT max(id) FROM agent_runs").fetchone()[0]

    def test_ask(self):
        for fetched in self.FETCHED:
            with self.subTest(fetched=fetched):
                returned = self.read_then_interrupt("SELECT counted(row) FROM ask(?)", fetched,
                                                    "Count up from one, %d" % fetched)
                self.assertEqual(self.run_record(self.last_run()), ("interrupted", returned, None, None, "interrupted"))

    def test_answer_table(self):
        self.con.execute("CREATE VIRTUAL TABLE temp.numbers USING ask('Count up from one')")
        run_id = self.last_run()
        self.assertEqual(self.run_record(run_id)[0], "ok")
        for fetched in self.FETCHED:
            with self.subTest(fetched=fetched):
                returned = self.read_then_interrupt("SELECT counted(i) FROM numbers", fetched)
                self.assertEqual(self.run_record(run_id), ("interrupted", returned, None, None, "interrupted"))

    def test_ask_result(self):
        for fetched in self.FETCHED:
            with self.subTest(fetched=fetched):
                run_id = self.con.execute("SELECT ask_start(?)", ("Count up from one, %d" % fetched,)).fetchone()[0]
                returned = self.read_then_interrupt("SELECT counted(row) FROM ask_result(?, 60000)", fetched, run_id)
                self.assertEqual(self.run_record(run_id), ("interrupted", returned, None, None, "interrupted"))


class BadInputTest(LLMTestCase):
    def test_bad_questions_and_settings_are_clear_errors(self):
        self.llm.load({"default": sql_reply("SELECT 1 AS one")})
        results = self.session([
            "SELECT * FROM ask(NULL)",
            "SELECT * FROM ask('')",
            "SELECT * FROM ask(printf('%.*c', 1048576, 'x'))",
            "SELECT * FROM ask(CAST(X'C328' AS TEXT))",
            "SELECT * FROM ask(X'00')",
            "SELECT * FROM ask(42)",
            "SELECT agent_config('max_rows', -1)",
            "SELECT agent_config('temperature', 'hot')",
            "SELECT agent_config('sql_timeout_ms', 99999999999)",
            "SELECT agent_config('nonsense', 1)",
            "SELECT COUNT(*) AS runs FROM agent_runs",
        ], {"default": sql_reply("SELECT 1 AS one")})
        expected = ["the question is NULL", "the question is empty", "the limit is",
                    "not valid UTF-8", "contains a NUL character", None,
                    "max_rows must be", "temperature must be", "sql_timeout_ms must be", "unknown setting"]
        for got, want in zip(results, expected):
            if want is None:
                self.assertEqual(got, [{"row": '{"one":1}'}])  # a number is a question too
            else:
                self.assertIsInstance(got, ShellError)
                self.assertIn(want, got)
        self.assertEqual(results[-1], [{"runs": 1}])


class ReadOnlyTest(LLMTestCase):
    def ask_uri(self, uri, *flags):
        self.llm.load({"rules": [{"match": "How many", "replies": [sql_reply("SELECT COUNT(*) AS n FROM orders")]}]})
        p = subprocess.run([SQLITE3, "-batch"] + list(flags) + [uri], capture_output=True, text=True, env=self.llm.env(),
                           input=".load %s\n.mode json\nSELECT * FROM ask('How many orders are there?');\n"
                                 "SELECT status FROM agent_runs;\n" % EXTENSION)
        self.assertEqual(p.stderr, "")
        self.assertIn('{"row":"{\\"n\\":100}"}', p.stdout)
        self.assertIn('{"status":"ok"}', p.stdout)

    def test_read_only_file_opened_read_only(self):
        os.chmod(self.db, 0o444)
        self.ask_uri(self.db, "-readonly")

    def test_mode_ro(self):
        before = file_digest(self.db)
        self.ask_uri("file:%s?mode=ro" % self.db)
        self.assertEqual(file_digest(self.db), before)

    def test_immutable(self):
        os.chmod(self.db, 0o444)
        os.chmod(self.tmp, 0o555)  # not even a journal could be made
        self.addCleanup(os.chmod, self.tmp, 0o755)
        self.ask_uri("file:%s?immutable=1" % self.db)


if __name__ == "__main__":
    unittest.main()
