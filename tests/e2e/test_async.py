"""The asynchronous ask: ask_start('q') returns a run id at once, the model
call is made on QueryPilot's own threads, and ask_result(id [, wait_ms])
gives the rows once the reply is in, checked and run on the caller's
connection. Every test talks to the scripted model on 127.0.0.1, which can
delay its replies."""
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
import unittest

from harness import EXTENSION, LLMTestCase, connect, make_shop_db, sql_reply

COUNT = "SELECT count(*) AS n FROM customers"
WRITE = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)
con.execute("BEGIN IMMEDIATE")
con.execute("CREATE TABLE IF NOT EXISTS notes(body TEXT)")
con.execute("INSERT INTO notes VALUES ('written while the model thought')")
con.execute("COMMIT")
"""


def reply(sql, delay_ms=0, hold=False):
    # hold: sent only after self.llm.release() (the scripted model's "hold").
    return {"content": sql_reply(sql), "delay_ms": delay_ms, "hold": hold}


class AsyncAskTest(LLMTestCase):
    def connect(self, script=None, db=None, **settings):
        if script is not None:
            self.llm.load(script)
        con = connect(db or self.db, self.llm.env(), check_same_thread=False)
        self.addCleanup(con.close)
        for key, value in settings.items():
            con.execute("SELECT agent_config(?, ?)", (key, value))
        return con

    def start(self, con, question="How many customers are there?"):
        run_id = con.execute("SELECT ask_start(?)", (question,)).fetchone()[0]
        self.assertIsInstance(run_id, int)
        return run_id

    def state(self, con, run_id):
        return con.execute("SELECT ask_state(?)", (run_id,)).fetchone()[0]

    def rows_in_one_wait(self, con, run_id):
        """The run's rows, read with one ask_result that waits: a run that goes
        back to its model (a correction's or a review's call) is seen through
        while the wait lasts."""
        return con.execute("SELECT row FROM ask_result(?, 30000)", (run_id,)).fetchall()

    def wait_for_requests(self, n=1):
        deadline = time.time() + 60
        while len(self.llm.log()) < n:
            if time.time() > deadline:
                self.fail("the model was never asked")
            time.sleep(0.02)

    def test_start_then_result(self):
        con = self.connect({"rules": [{"match": "", "replies": [reply(COUNT)]}]})
        run_id = self.start(con)
        rows = con.execute("SELECT row, run_id, wait_ms, question, sql, confidence IS NOT NULL "
                           "FROM ask_result(?, 30000)", (run_id,)).fetchall()
        self.assertEqual(rows, [('{"n":15}', run_id, 30000, "How many customers are there?", COUNT, 1)])
        self.assertEqual(self.state(con, run_id), "done")
        self.assertEqual(con.execute("SELECT status, rows FROM agent_runs WHERE id = ?", (run_id,)).fetchall(),
                         [("ok", 1)])
        # Asked again, the answer's SQL is checked and run again.
        self.assertEqual(con.execute("SELECT row FROM ask_result(?)", (run_id,)).fetchall(), [('{"n":15}',)])

    def test_pending_then_ready(self):
        con = self.connect({"rules": [{"match": "", "replies": [reply(COUNT, hold=True)]}]})
        run_id = self.start(con)
        self.assertEqual(self.state(con, run_id), "pending")
        self.assertEqual(con.execute("SELECT status FROM agent_runs WHERE id = ?", (run_id,)).fetchone(),
                         ("pending",))
        with self.assertRaises(sqlite3.OperationalError) as e:
            con.execute("SELECT * FROM ask_result(?)", (run_id,)).fetchall()
        self.assertIn("run %d is pending" % run_id, str(e.exception))
        self.assertIn("ask_result(%d, " % run_id, str(e.exception))
        self.llm.release()
        deadline = time.time() + 60
        while self.state(con, run_id) == "pending":
            self.assertLess(time.time(), deadline, "the reply never came")
            time.sleep(0.05)
        self.assertEqual(self.state(con, run_id), "ready")
        # Read without waiting, the answer runs and its review (on by
        # default) goes to the model: pending again, then ready, then the rows.
        with self.assertRaises(sqlite3.OperationalError) as e:
            con.execute("SELECT row FROM ask_result(?, 0)", (run_id,)).fetchall()
        self.assertIn("run %d is pending" % run_id, str(e.exception))
        while self.state(con, run_id) == "pending":
            self.assertLess(time.time(), deadline, "the review's reply never came")
            time.sleep(0.05)
        self.assertEqual(self.state(con, run_id), "ready")
        self.assertEqual(con.execute("SELECT row FROM ask_result(?, 0)", (run_id,)).fetchall(), [('{"n":15}',)])
        self.assertEqual(self.state(con, run_id), "done")
        self.assertEqual(con.execute("SELECT review, llm_calls FROM agent_runs WHERE id = ?", (run_id,)).fetchone(),
                         ("accepted", 2))

    def test_an_asynchronous_ask_is_reviewed_on_the_worker(self):
        review = json.dumps({"is_acceptable": True, "should_refine": False, "issues": [],
                             "reasoning": "it counts the customers"})
        con = self.connect({"rules": [{"match": "The tables the query reads", "review": True, "replies": [review]},
                                      {"match": "", "replies": [reply(COUNT)]}]})
        run_id = self.start(con)
        # The review's call is made on a worker as the generation's was,
        # while the one ask_result waits.
        rows = self.rows_in_one_wait(con, run_id)
        self.assertEqual(rows, [('{"n":15}',)])
        log = self.llm.log(reviews=True)
        self.assertEqual(len(log), 2)
        self.assertIn(COUNT, log[1]["body"]["messages"][-1]["content"])
        self.assertEqual(con.execute("SELECT status, review, llm_calls FROM agent_runs WHERE id = ?",
                                     (run_id,)).fetchone(), ("ok", "accepted", 2))
        self.assertEqual(con.execute("SELECT reflection ->> '$.review.is_acceptable' FROM agent_attempts "
                                     "WHERE run_id = ?", (run_id,)).fetchone(), (1,))

    def test_an_asynchronous_answer_its_review_sends_back_is_kept_when_the_correction_is_not_accepted(self):
        # Each pause for the model closes the answer's statement: the answer
        # held while its correction is reviewed is run again when returned.
        def review(ok):
            return json.dumps({"is_acceptable": ok, "should_refine": not ok, "issues": [] if ok else ["odd"],
                               "reasoning": "not what was asked"})
        con = self.connect({"rules": [{"match": "The tables the query reads", "review": True, "replies": [review(False)]},
                                      {"match": "", "replies": [reply(COUNT), reply(COUNT + " WHERE id < 3")]}]})
        run_id = self.start(con)
        rows = self.rows_in_one_wait(con, run_id)
        self.assertEqual(rows, [('{"n":15}',)])
        self.assertEqual(len(self.llm.log(reviews=True)), 4)  # generation, review, correction, its review
        self.assertEqual(con.execute("SELECT status, review, attempts, answer_attempt, llm_calls, sql "
                                     "FROM agent_runs WHERE id = ?", (run_id,)).fetchone(),
                         ("ok", "not accepted", 2, 1, 4, COUNT))

    def test_a_correction_goes_back_to_the_model(self):
        con = self.connect({"rules": [{"match": "", "replies": [
            reply("SELECT count(*) AS n FROM customer"), reply(COUNT)]}]})
        run_id = self.start(con)
        # The first reply fails here; its correction waits on the model again.
        first = self.rows_in_one_wait(con, run_id)
        self.assertEqual(first, [('{"n":15}',)])
        self.assertEqual(len(self.llm.log(reviews=True)), 3)  # generation, correction, review
        self.assertIn("no such table", self.llm.log()[1]["body"]["messages"][-1]["content"])
        self.assertEqual(con.execute("SELECT attempt, error_type FROM agent_attempts WHERE run_id = ? ORDER BY attempt",
                                     (run_id,)).fetchall(), [(1, "table_not_found"), (2, None)])
        self.assertEqual(con.execute("SELECT status, attempts FROM agent_runs WHERE id = ?", (run_id,)).fetchone(),
                         ("ok", 2))

    def test_unknown_id_and_bad_arguments(self):
        con = self.connect()
        for sql, message in [
                ("SELECT * FROM ask_result(987654)", "no run 987654 was started by ask_start"),
                ("SELECT ask_state(987654)", "no run 987654 was started by ask_start"),
                ("SELECT * FROM ask_result('x')", "run id from ask_start"),
                ("SELECT * FROM ask_result(1, 600001)", "wait_ms is from 0"),
                ("SELECT * FROM ask_result(1, -1)", "wait_ms is from 0"),
                ("SELECT * FROM ask_result", "needs a run id"),
                ("SELECT ask_start(NULL)", "the question is NULL")]:
            with self.subTest(sql=sql):
                with self.assertRaises(sqlite3.OperationalError) as e:
                    con.execute(sql).fetchall()
                self.assertIn(message, str(e.exception))

    def test_a_failed_run_gives_its_error(self):
        con = self.connect({"rules": [{"match": "", "replies": [
            {"status": 401, "error": "invalid api key"}]}]}, http_retries=0)
        run_id = self.start(con)
        with self.assertRaises(sqlite3.OperationalError) as e:
            con.execute("SELECT * FROM ask_result(?, 30000)", (run_id,)).fetchall()
        self.assertIn("invalid api key", str(e.exception))
        self.assertEqual(self.state(con, run_id), "failed")
        self.assertEqual(con.execute("SELECT status FROM agent_runs WHERE id = ?", (run_id,)).fetchone(),
                         ("provider_error",))

    def test_a_reply_that_echoes_the_request_shows_no_secret_in_ask_result(self):
        base = "http://carol:pass@127.0.0.1:%d/v1?key=SECRET&api-version=2024-06-01" % self.llm.port
        echo = ("POST /v1/chat/completions?key=SECRET&api-version=2024-06-01 HTTP/1.1\r\n"
                "Authorization: Basic Y2Fyb2w6cGFzcw==\r\n\r\nfrom %s, password pass." % base)
        con = self.connect({"rules": [{"match": "", "replies": [{"content": echo}]}]},
                           base_url=base, max_attempts=1)
        run_id = self.start(con)
        with self.assertRaises(sqlite3.OperationalError) as e:
            con.execute("SELECT * FROM ask_result(?, 30000)", (run_id,)).fetchall()
        shown = [str(e.exception),
                 json.dumps(con.execute("SELECT * FROM agent_runs").fetchall()),
                 json.dumps(con.execute("SELECT * FROM agent_attempts").fetchall())]
        self.assertIn("key=[redacted]&api-version=2024-06-01 HTTP/1.1", shown[0])
        for text in shown:
            for secret in ("SECRET", "Y2Fyb2w6cGFzcw==", "carol", "password pass"):
                self.assertNotIn(secret, text)

    def test_another_connection_to_the_same_file_gets_the_rows(self):
        con = self.connect({"rules": [{"match": "", "replies": [reply(COUNT, 500)]}]})
        run_id = self.start(con)
        other = self.connect()
        self.assertEqual(other.execute("SELECT row FROM ask_result(?, 30000)", (run_id,)).fetchall(),
                         [('{"n":15}',)])
        self.assertEqual(self.state(con, run_id), "done")
        # The run is recorded where it started.
        self.assertEqual(con.execute("SELECT status FROM agent_runs WHERE id = ?", (run_id,)).fetchone(), ("ok",))

    def test_a_run_read_on_another_connection_is_recorded_as_on_its_own(self):
        # More rows than a run reads before it answers: their count is known
        # only once the reader has read them all.
        with sqlite3.connect(self.db) as setup:
            setup.execute("CREATE TABLE numbers(n INTEGER PRIMARY KEY)")
            setup.execute("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 300) "
                          "INSERT INTO numbers SELECT i FROM c")
        setup.close()
        con = self.connect({"rules": [{"match": "", "replies": [reply("SELECT n FROM numbers ORDER BY n")]}]})
        other = self.connect()
        here = self.start(con, "Which numbers are there?")
        self.assertEqual(len(con.execute("SELECT row FROM ask_result(?, 30000)", (here,)).fetchall()), 300)
        there = self.start(con, "Which numbers are there, all of them?")
        self.assertEqual(len(other.execute("SELECT row FROM ask_result(?, 30000)", (there,)).fetchall()), 300)
        cur = con.execute("SELECT * FROM agent_runs WHERE id IN (?, ?) ORDER BY id", (here, there))
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
        self.assertEqual([r["rows"] for r in rows], [300, 300])
        for name in names:
            # prompt_tokens: the scripted model counts the question too.
            if name in ("id", "question", "created_at", "duration_ms", "llm_ms", "node_times", "prompt_tokens"):
                continue
            self.assertEqual(rows[0][name], rows[1][name], name)

    def test_a_connection_to_another_database_is_refused(self):
        con = self.connect({"rules": [{"match": "", "replies": [reply(COUNT)]}]})
        run_id = self.start(con)
        other = self.connect(db=make_shop_db(self.tmp, "other.db"))
        for sql in ("SELECT * FROM ask_result(?, 1000)", "SELECT ask_state(?)"):
            with self.assertRaises(sqlite3.OperationalError) as e:
                other.execute(sql, (run_id,)).fetchall()
            self.assertIn("started on a connection to other databases", str(e.exception))
        memory = self.connect(db=":memory:")
        with self.assertRaises(sqlite3.OperationalError):
            memory.execute("SELECT * FROM ask_result(?)", (run_id,)).fetchall()

    def test_a_hundred_at_once_bounded_threads_none_lost(self):
        con = self.connect({"rules": [{"match": "", "replies": [reply(COUNT, 200)]}]})
        tasks = lambda: len(os.listdir("/proc/self/task"))
        before = tasks()
        ids = [self.start(con, "How many customers are there? (%d)" % i) for i in range(100)]
        self.assertEqual(len(set(ids)), 100)
        most = 0
        while len(self.llm.log()) < 100:
            most = max(most, tasks())
            time.sleep(0.01)
        # The default async_threads is 4 (a call's own short-lived resolver
        # threads aside): never one thread per run.
        self.assertLessEqual(most - before, 8)
        for run_id in ids:
            self.assertEqual(con.execute("SELECT row FROM ask_result(?, 30000)", (run_id,)).fetchall(),
                             [('{"n":15}',)])
        self.assertEqual(con.execute("SELECT count(*) FROM agent_runs WHERE status = 'ok'").fetchone(), (100,))

    def test_the_host_writes_while_a_run_waits(self):
        con = self.connect({"rules": [{"match": "", "replies": [reply(COUNT, hold=True)]}]})
        run_id = self.start(con)
        self.wait_for_requests()
        p = subprocess.run([sys.executable, "-c", WRITE, self.db], capture_output=True, text=True, timeout=60)
        self.assertEqual((p.returncode, p.stderr.strip()), (0, ""))
        # The asking connection is free as well.
        self.assertEqual(con.execute("SELECT count(*) FROM notes").fetchone(), (1,))
        self.assertEqual(self.state(con, run_id), "pending")
        self.llm.release()
        self.assertEqual(con.execute("SELECT row FROM ask_result(?, 30000)", (run_id,)).fetchall(), [('{"n":15}',)])

    def test_closing_the_connection_with_runs_in_flight(self):
        # The replies are held: the runs are in flight when their connection
        # closes, and the last one when the process ends, however slow the
        # machine (a call not cancelled at exit would hold the exit).
        self.llm.load({"rules": [{"match": "", "replies": [reply(COUNT, hold=True)]}]})
        script = textwrap.dedent("""
            import json, sys, time, urllib.request
            sys.path.insert(0, %r)
            from harness import connect
            env = %r
            con = connect(%r, env)
            other = connect(%r, env)
            ids = [con.execute("SELECT ask_start('How many customers? %%d')" %% i).fetchone()[0] for i in range(6)]
            # Four calls at once (async_threads) have reached the model.
            deadline = time.monotonic() + 120
            while len(json.loads(urllib.request.urlopen(%r, timeout=60).read())) < 4:
                assert time.monotonic() < deadline, "the model was never asked"
                time.sleep(0.02)
            con.close()
            states = [other.execute("SELECT ask_state(?)", (i,)).fetchone()[0] for i in ids]
            try:
                other.execute("SELECT * FROM ask_result(?)", (ids[0],)).fetchall()
            except Exception as e:
                print(e)
            print(",".join(states))
            # A run still waiting when the process exits: its call is
            # cancelled and its thread joined at exit.
            third = connect(%r, env)
            third.execute("SELECT ask_start('How many customers? late')").fetchone()
            other.close()
        """) % (os.path.dirname(os.path.abspath(__file__)), self.llm.env(), self.db, self.db, self.llm.base + "/__log",
                self.db)
        p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ))
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        lines = p.stdout.strip().splitlines()
        self.assertIn("is lost: the connection that started run", lines[0])
        self.assertEqual(lines[1], ",".join(["lost"] * 6))

    def test_a_run_pending_when_the_process_ended_is_lost(self):
        history = os.path.join(self.tmp, "history.qp")
        self.llm.load({"rules": [{"match": "", "replies": [reply(COUNT, 10000)]}]})
        script = textwrap.dedent("""
            import os, sys, time
            sys.path.insert(0, %r)
            from harness import connect
            con = connect(%r, %r)
            con.execute("SELECT agent_config('history_file', ?)", (%r,))
            print(con.execute("SELECT ask_start('How many customers are there?')").fetchone()[0], flush=True)
            time.sleep(0.5)
            os._exit(0)
        """) % (os.path.dirname(os.path.abspath(__file__)), self.db, self.llm.env(), history)
        p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        run_id = int(p.stdout.strip())
        con = self.connect(history_file=history)
        self.assertEqual(self.state(con, run_id), "lost")
        with self.assertRaises(sqlite3.OperationalError) as e:
            con.execute("SELECT * FROM ask_result(?)", (run_id,)).fetchall()
        self.assertIn("run %d is lost: the process that started it ended" % run_id, str(e.exception))
        self.assertEqual(con.execute("SELECT status FROM agent_runs WHERE id = ?", (run_id,)).fetchone(), ("lost",))

    def run_process(self, body, *args):
        """Runs `body` in a new python3 process (a new QueryPilot registry),
        with `tests`, the database, the model's environment and `args` at
        hand; returns its output."""
        script = textwrap.dedent("""
            import json, sys
            sys.path.insert(0, %r)
            from harness import connect
            db, env = %r, %r
            args = %r
        """) % (os.path.dirname(os.path.abspath(__file__)), self.db, self.llm.env(), args) + textwrap.dedent(body)
        p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        return p.stdout

    def test_run_ids_continue_after_those_a_history_file_holds(self):
        history = os.path.join(self.tmp, "history.qp")
        self.llm.load({"rules": [{"match": "", "replies": [reply(COUNT)]}]})
        earlier = json.loads(self.run_process("""
            con = connect(db, env)
            con.execute("SELECT agent_config('history_file', ?)", (args[0],))
            run_id = con.execute("SELECT ask_start('How many customers are there?')").fetchone()[0]
            con.execute("SELECT * FROM ask_result(?, 30000)", (run_id,)).fetchall()
            con.execute("SELECT * FROM ask('How many customers are there, asked at once?')").fetchall()
            print(json.dumps(con.execute("SELECT id, question FROM agent_runs ORDER BY id").fetchall()))
        """, history))
        self.assertEqual(len(earlier), 2)
        # The next process: a connection with the history file, and one of
        # the same database without it (a pool's), whose run is not taken
        # for one of the file's.
        later = json.loads(self.run_process("""
            con = connect(db, env)
            con.execute("SELECT agent_config('history_file', ?)", (args[0],))
            other = connect(db, env)
            theirs = other.execute("SELECT ask_start('How many customers now?')").fetchone()[0]
            rows = con.execute("SELECT row FROM ask_result(?, 30000)", (theirs,)).fetchall()
            mine = con.execute("SELECT ask_start('How many customers here?')").fetchone()[0]
            con.execute("SELECT * FROM ask_result(?, 30000)", (mine,)).fetchall()
            print(json.dumps({"theirs": theirs, "rows": rows, "mine": mine,
                              "runs": con.execute("SELECT id, question FROM agent_runs ORDER BY id").fetchall()}))
        """, history))
        largest = max(run_id for run_id, _ in earlier)
        self.assertGreater(later["theirs"], largest)
        self.assertEqual(later["rows"], [['{"n":15}']])
        self.assertGreater(later["mine"], later["theirs"])
        # The file's runs keep their ids and questions; the new one follows.
        self.assertEqual(later["runs"], earlier + [[later["mine"], "How many customers here?"]])


if __name__ == "__main__":
    unittest.main()
