"""Conversation and memory, end to end through the sqlite3 shell and the
scripted model: clarifying questions instead of a guess; a repeated question
answered by re-running its verified SQL with no model call, on the data as it
is now, until the schema changes; the history summed up in agent_metrics."""
import errno
import os
import sqlite3
import subprocess
import sys
import unittest

from harness import LLMTestCase, ShellError, connect, file_digest, sql_reply

COUNT_SQL = "SELECT COUNT(*) AS n FROM orders"


class AnswerCacheTest(LLMTestCase):
    def test_a_repeated_question_costs_no_model_call(self):
        res = self.session([
            "SELECT * FROM ask('How many orders are there?')",
            # The same question, written differently: no model call.
            "SELECT * FROM ask('how many   orders are there')",
            # New data: the SQL runs again and sees it.
            "INSERT INTO orders (customer_id, ordered_at, status) SELECT customer_id, ordered_at, status FROM orders LIMIT 1",
            "SELECT * FROM ask('How many orders are there?')",
            "SELECT id, llm_calls, cached_from, attempts, status FROM agent_runs",
            "SELECT run_id, sql, error_type FROM agent_attempts WHERE run_id = 3",
        ], {"rules": [{"match": "orders are there", "replies": [sql_reply(COUNT_SQL)]}]})
        self.assertEqual(res[0], [{"row": '{"n":100}'}])
        self.assertEqual(res[1], [{"row": '{"n":100}'}])
        self.assertEqual(res[3], [{"row": '{"n":101}'}])
        self.assertEqual(res[4], [
            {"id": 1, "llm_calls": 2, "cached_from": None, "attempts": 1, "status": "ok"},  # and its review
            {"id": 2, "llm_calls": 0, "cached_from": 1, "attempts": 1, "status": "ok"},
            {"id": 3, "llm_calls": 0, "cached_from": 1, "attempts": 1, "status": "ok"},
        ])
        self.assertEqual(res[5], [{"run_id": 3, "sql": COUNT_SQL, "error_type": None}])
        self.assertEqual(len(self.llm.log()), 1)

    def test_a_schema_change_or_the_setting_asks_the_model_again(self):
        res = self.session([
            "SELECT * FROM ask('How many orders are there?')",
            "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)",
            "SELECT * FROM ask('How many orders are there?')",
            "SELECT agent_config('answer_cache', 0)",
            "SELECT * FROM ask('How many orders are there?')",
            "SELECT agent_config('answer_cache', 1)",
            "SELECT * FROM ask('How many orders are there?')",
            "SELECT id, llm_calls, cached_from FROM agent_runs",
        ], {"rules": [{"match": "orders are there", "replies": [sql_reply(COUNT_SQL)]}]})
        self.assertEqual(res[-1], [
            {"id": 1, "llm_calls": 2, "cached_from": None},   # a generation and its review
            {"id": 2, "llm_calls": 2, "cached_from": None},   # the schema changed
            {"id": 3, "llm_calls": 2, "cached_from": None},   # the cache is off
            {"id": 4, "llm_calls": 0, "cached_from": 2},   # off, nothing was remembered either
        ])

    def test_failed_and_flagged_answers_are_not_remembered(self):
        res = self.session([
            "SELECT * FROM ask('How many widgets are there?')",
            "SELECT * FROM ask('How many widgets are there?')",
            "SELECT id, llm_calls, cached_from, status FROM agent_runs",
        ], {"rules": [{"match": "widgets", "replies": [sql_reply("SELECT COUNT(*) FROM widgets")]}]},
            QUERYPILOT_MAX_ATTEMPTS="1")
        self.assertIsInstance(res[0], ShellError)
        self.assertIsInstance(res[1], ShellError)
        self.assertEqual([r["llm_calls"] for r in res[2]], [1, 1])
        self.assertEqual([r["cached_from"] for r in res[2]], [None, None])


CLARIFY = ("The question can be read more than one way.\n```clarify\n- Which period: the calendar year 2024 "
           "or the last 12 months?\n- Spent: order totals before or after refunds?\n```")


class ClarificationTest(LLMTestCase):
    def test_an_ambiguous_question_is_answered_by_questions_in_one_call(self):
        res = self.session([
            "SELECT * FROM ask('Which customers spent the most last year?')",
            "SELECT status, attempts, llm_calls, clarifications FROM agent_runs",
        ], {"rules": [{"match": "spent the most", "replies": [CLARIFY]}]})
        self.assertIsInstance(res[0], ShellError)
        self.assertIn("the question needs clarification: (1) Which period: the calendar year 2024 or the last "
                      "12 months? (2) Spent: order totals before or after refunds?", res[0])
        self.assertEqual(res[1], [{"status": "needs_clarification", "attempts": 1, "llm_calls": 1,
                                   "clarifications": '["Which period: the calendar year 2024 or the last 12 months?",'
                                                     '"Spent: order totals before or after refunds?"]'}])
        self.assertIn("```clarify", self.llm.log()[0]["body"]["messages"][0]["content"])

    def test_a_program_can_tell_and_read_the_questions(self):
        self.llm.load({"rules": [{"match": "spent the most", "replies": [CLARIFY]}]})
        con = connect(self.db, self.llm.env())
        with self.assertRaises(sqlite3.OperationalError) as cm:
            con.execute("SELECT * FROM ask('Which customers spent the most last year?')").fetchall()
        self.assertTrue(str(cm.exception).startswith("ask(): the question needs clarification"))
        questions = con.execute("SELECT value FROM agent_runs, json_each(agent_runs.clarifications) "
                                "WHERE status = 'needs_clarification'").fetchall()
        self.assertEqual(len(questions), 2)
        con.close()

    def test_with_clarify_off_the_model_takes_the_likely_reading(self):
        answer = "SELECT c.name FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.id LIMIT 1"
        res = self.session([
            "SELECT agent_config('clarify', 0)",
            "SELECT count(*) AS n FROM ask('Which customers spent the most last year?')",
            "SELECT status, attempts FROM agent_runs",
        ], {"rules": [{"match": "spent the most", "replies": [CLARIFY, sql_reply(answer)]}]})
        self.assertEqual(res[1], [{"n": 1}])
        # The questions were not taken as an answer: the model was asked for SQL.
        self.assertEqual(res[2], [{"status": "ok", "attempts": 2}])
        system = self.llm.log()[0]["body"]["messages"][0]["content"]
        self.assertNotIn("clarify", system)
        self.assertIn("most likely reading", system)


REFUNDED_SQL = "SELECT COUNT(*) AS n FROM orders WHERE status = 'refunded'"
WRONG_SQL = "SELECT COUNT(*) AS n FROM orders WHERE status = 'paid'"


class FeedbackTest(LLMTestCase):
    def user_messages(self):
        return [m["content"] for e in self.llm.log() for m in e["body"]["messages"] if m["role"] == "user"]

    def test_good_runs_teach_similar_questions_and_bad_runs_never_appear(self):
        res = self.session([
            "SELECT * FROM ask('How many orders were refunded?')",          # 1: right
            "SELECT * FROM ask('How many orders have been refunded so far?')",  # 2: wrong
            "SELECT agent_feedback(1, 'good') AS v",
            "SELECT agent_feedback(2, 'bad') AS v",
            "SELECT * FROM ask('Count the refunded orders')",               # 3: sees run 1 only
            "SELECT id, feedback, examples FROM agent_runs",
            "SELECT agent_feedback(99, 'good')",
            "SELECT agent_feedback(1, 'great')",
        ], {"rules": [
            {"match": "Question: How many orders were refunded", "replies": [sql_reply(REFUNDED_SQL)]},
            {"match": "Question: How many orders have been refunded", "replies": [sql_reply(WRONG_SQL)]},
            {"match": "Question: Count the refunded", "replies": [sql_reply(REFUNDED_SQL)]},
        ]})
        self.assertEqual(res[2], [{"v": "good"}])
        self.assertEqual(res[3], [{"v": "bad"}])
        self.assertEqual(res[4], [{"row": '{"n":11}'}])
        self.assertEqual(res[5], [
            {"id": 1, "feedback": "good", "examples": None},
            {"id": 2, "feedback": "bad", "examples": None},
            {"id": 3, "feedback": None, "examples": "[1]"},
        ])
        self.assertIn("there is no run 99", res[6])
        self.assertIn("'good', 'bad' or NULL", res[7])
        third = self.user_messages()[2]
        self.assertIn("Q: How many orders were refunded?\nSQL: " + REFUNDED_SQL, third)
        for message in self.user_messages():
            self.assertNotIn(WRONG_SQL, message.replace("Question: How many orders have been refunded so far?", ""))

    def test_first_time_successes_teach_only_when_allowed_and_bad_overrides(self):
        res = self.session([
            "SELECT * FROM ask('How many orders were refunded?')",
            "SELECT * FROM ask('Count the refunded orders')",
            "SELECT agent_config('learn_from_success', 1)",
            "SELECT * FROM ask('Number of refunded orders')",
            "SELECT agent_feedback(1, 'bad')",
            "SELECT agent_feedback(2, 'bad')",
            "SELECT * FROM ask('Refunded orders: how many')",
            "SELECT id, examples FROM agent_runs",
        ], {"rules": [{"match": "refunded", "replies": [sql_reply(REFUNDED_SQL)]}]})
        # Run 3 (a first-time success, allowed now) still teaches; 1 and 2 never again.
        self.assertEqual([r["examples"] for r in res[-1]], [None, None, "[2,1]", "[3]"])


class PerStepModelTest(LLMTestCase):
    def test_corrections_can_go_to_another_model(self):
        res = self.session([
            "SELECT agent_config('correction_model', 'stronger-model')",
            "SELECT * FROM ask('What is the revenue per category?')",
            "SELECT attempt, model FROM agent_attempts",
        ], {"rules": [{"match": "revenue", "replies": [
            sql_reply("SELECT category, SUM(nope) FROM products"),
            sql_reply("SELECT category, SUM(price) AS revenue FROM products GROUP BY category")]}]})
        self.assertEqual(res[2], [{"attempt": 1, "model": "scripted-model"}, {"attempt": 2, "model": "stronger-model"}])
        self.assertEqual([e["body"]["model"] for e in self.llm.log()], ["scripted-model", "stronger-model"])


class PromptsTest(LLMTestCase):
    def test_prompts_are_editable_in_sql_and_can_go_back_to_the_default(self):
        res = self.session([
            "SELECT count(*) AS n, sum(is_default) AS defaults FROM agent_prompts",
            "SELECT agent_prompt('rules', 'You write SQLite for the shop team. Reply with one query in a ```sql block.') AS t",
            "SELECT agent_prompt('correction.schema', 'Check every name against the schema.') AS t",
            "SELECT name FROM agent_prompts WHERE is_default = 0 ORDER BY name",
            "SELECT * FROM ask('What is the revenue per category?')",
            "SELECT agent_prompt('rules', NULL) LIKE 'You translate questions%' AS back",
            "SELECT agent_prompt('colour')",
            "SELECT agent_prompt('rules', '')",
        ], {"rules": [{"match": "revenue", "replies": [
            sql_reply("SELECT category, SUM(nope) FROM products"),
            sql_reply("SELECT category, SUM(price) AS revenue FROM products GROUP BY category")]}]})
        self.assertEqual(res[0], [{"n": 25, "defaults": 25}])  # one instruction per finding that sends a result back, the chart prompt and the review's two
        self.assertEqual(res[3], [{"name": "correction.schema"}, {"name": "rules"}])
        self.assertEqual(res[5], [{"back": 1}])  # NULL restored the default
        self.assertIn("unknown prompt 'colour'", res[6])
        self.assertIn("cannot be empty", res[7])
        first, second = self.llm.log()
        self.assertTrue(first["body"]["messages"][0]["content"].startswith("You write SQLite for the shop team."))
        self.assertIn("Check every name against the schema.", second["body"]["messages"][-1]["content"])


EXPLANATION = ("Outdoor products brought in the most revenue, 10,839, ahead of Electronics at 10,006. "
               "Kitchen brought in the least, 3,440.7.")


class ExplainTest(LLMTestCase):
    def test_an_explanation_is_asked_for_after_the_rows_and_recorded(self):
        res = self.session([
            "SELECT agent_config('explain_model', 'cheap-model')",
            "SELECT COUNT(*) AS n FROM ask('What is the revenue per category?')",
            "SELECT agent_explain(1) AS e",
            "SELECT llm_calls, explanation FROM agent_runs",
            "SELECT agent_explain(7)",
        ], {"rules": [
            {"match": "Question: What is the revenue per category?\nSQL:", "replies": [EXPLANATION]},
            {"match": "revenue per category", "replies": [
                sql_reply("SELECT category, SUM(price) AS revenue FROM products GROUP BY category")]},
        ]})
        self.assertEqual(res[1], [{"n": 4}])
        self.assertEqual(res[2], [{"e": EXPLANATION}])
        self.assertEqual(res[3], [{"llm_calls": 3, "explanation": EXPLANATION}])  # generation, review, explanation
        self.assertIn("there is no run 7", res[4])
        first, second = self.llm.log()
        self.assertEqual(second["body"]["model"], "cheap-model")
        self.assertIn('"category":"Outdoor"', second["body"]["messages"][1]["content"])

    def test_when_the_model_fails_the_rows_still_came_back(self):
        res = self.session([
            "SELECT agent_config('http_retries', 0)",
            "SELECT COUNT(*) AS n FROM ask('What is the revenue per category?')",
            "SELECT agent_explain(1)",
            "SELECT status, explanation FROM agent_runs",
        ], {"rules": [
            {"match": "SQL:", "replies": [{"status": 500, "error": "down"}]},
            {"match": "revenue per category", "replies": [
                sql_reply("SELECT category, SUM(price) AS revenue FROM products GROUP BY category")]},
        ]})
        self.assertEqual(res[1], [{"n": 4}])
        self.assertIsInstance(res[2], ShellError)
        self.assertIn("HTTP 500", res[2])
        self.assertEqual(res[3], [{"status": "ok", "explanation": None}])


CANADA_SQL = ("SELECT COUNT(*) AS n FROM orders o JOIN customers c ON c.id = o.customer_id "
              "WHERE c.country = 'Canada'")
FRANCE_SQL = CANADA_SQL.replace("Canada", "France")


class SessionTest(LLMTestCase):
    def test_a_follow_up_is_resolved_in_its_session_and_never_leaks_into_another(self):
        res = self.session([
            "SELECT agent_config('session', 'alice')",
            "SELECT * FROM ask('How many orders came from Canada?')",
            "SELECT * FROM ask('And from France?')",
            "SELECT agent_config('session', 'bob')",
            "SELECT * FROM ask('And from France?')",
            "SELECT agent_config('session', NULL)",
            "SELECT * FROM ask('how many orders came from France')",
            "SELECT id, session, question, standalone_question, llm_calls, cached_from FROM agent_runs",
        ], {"rules": [
            {"match": "Question: How many orders came from Canada", "replies": [sql_reply(CANADA_SQL)]},
            {"match": "Earlier in this conversation", "replies": [
                "Standalone: How many orders came from France?\n" + sql_reply(FRANCE_SQL)]},
            {"match": "Question: And from France", "replies": [
                "```clarify\nFrance compared with what: which measure do you mean?\n```"]},
        ]})
        self.assertEqual(res[2], [{"row": '{"n":13}'}])
        self.assertIsInstance(res[4], ShellError)          # bob has no conversation to follow
        self.assertIn("needs clarification", res[4])
        self.assertEqual(res[6], [{"row": '{"n":13}'}])    # the restated follow-up, from the cache
        self.assertEqual(res[7], [
            {"id": 1, "session": "alice", "question": "How many orders came from Canada?",
             "standalone_question": None, "llm_calls": 2, "cached_from": None},  # and its review
            {"id": 2, "session": "alice", "question": "And from France?",
             "standalone_question": "How many orders came from France?", "llm_calls": 2, "cached_from": None},
            {"id": 3, "session": "bob", "question": "And from France?",
             "standalone_question": None, "llm_calls": 1, "cached_from": None},
            {"id": 4, "session": None, "question": "how many orders came from France",
             "standalone_question": None, "llm_calls": 0, "cached_from": 2},
        ])
        user = [e["body"]["messages"][1]["content"] for e in self.llm.log()]
        self.assertEqual(len(user), 3)
        self.assertIn("Earlier in this conversation:\nQ: How many orders came from Canada?\nSQL: " + CANADA_SQL, user[1])
        self.assertNotIn("Canada", user[2])


# agent_attempts' columns, in order: users' SQL reads them by these names
# (SELECT * included), so none is renamed, moved or dropped. agent_runs'
# are pinned once, in tests/unit/history_test.cpp (kRunFields), and
# test_docs.py checks its page against the table.
ATTEMPT_COLUMNS = ["run_id", "attempt", "sql", "error_type", "error", "hint", "strategy", "diff", "reply",
                   "reflection", "prompt_tokens", "completion_tokens", "llm_ms", "exec_ms", "model", "stood_by"]


class RecordColumnsTest(LLMTestCase):
    def test_agent_runs_and_agent_attempts_keep_their_columns(self):
        res = self.session([
            "SELECT name, type FROM pragma_table_info('agent_runs')",
            "SELECT name, type FROM pragma_table_info('agent_attempts')",
        ], {"rules": []})
        self.assertEqual([r["name"] for r in res[1]], ATTEMPT_COLUMNS)
        types = {r["name"]: r["type"] for r in res[0]}
        self.assertEqual([types[c] for c in ("id", "status", "duration_ms", "rows", "node_times")],
                         ["INTEGER", "TEXT", "REAL", "INTEGER", "TEXT"])


class HistoryFileTest(LLMTestCase):
    def test_history_survives_a_reconnect_and_the_database_is_never_written(self):
        path = os.path.join(self.tmp, "history.db")
        script = {"rules": [{"match": "orders are there", "replies": [sql_reply(COUNT_SQL)]},
                            {"match": "revenue", "replies": [sql_reply("SELECT SUM(price) AS revenue FROM products")]}]}
        before = file_digest(self.db)
        first = self.session([
            "SELECT agent_config('history_file', '%s')" % path,
            "SELECT * FROM ask('How many orders are there?')",
            "SELECT agent_feedback(1, 'good') AS v",
        ], script)
        self.assertEqual(first[2], [{"v": "good"}])
        second = self.session([
            "SELECT agent_config('history_file', '%s')" % path,
            "SELECT * FROM ask('What is the revenue?')",
            "SELECT id, question, feedback FROM agent_runs",
            "SELECT run_id, attempt FROM agent_attempts",
            "SELECT agent_config('history_file', '%s')" % os.path.join(self.tmp, "other.db"),
        ], script)
        self.assertEqual(second[2], [
            {"id": 1, "question": "How many orders are there?", "feedback": "good"},
            {"id": 2, "question": "What is the revenue?", "feedback": None},
        ])
        self.assertEqual(second[3], [{"run_id": 1, "attempt": 1}, {"run_id": 2, "attempt": 1}])
        self.assertIn("already", second[4])
        self.assertEqual(file_digest(self.db), before)
        con = sqlite3.connect(path)
        self.assertEqual(con.execute("SELECT COUNT(*) FROM querypilot_runs").fetchone(), (2,))
        con.close()

    def test_a_run_read_back_from_the_file_is_the_run_that_was_written(self):
        path = os.path.join(self.tmp, "history.db")
        script = {"rules": [{"match": "orders are there", "replies": [sql_reply(COUNT_SQL)]},
                            {"match": "widgets", "replies": [sql_reply("SELECT COUNT(*) FROM widgets")]}]}
        first = self.session([
            "SELECT agent_config('history_file', '%s')" % path,
            "SELECT * FROM ask('How many orders are there?')",
            "SELECT * FROM ask('How many widgets are there?')",
            "SELECT agent_feedback(1, 'good') AS v",
            "SELECT * FROM ask('how many orders are there')",
            "SELECT * FROM agent_runs",
            "SELECT * FROM agent_attempts",
            "SELECT name FROM pragma_table_info('agent_runs')",
        ], script, QUERYPILOT_MAX_ATTEMPTS="2")
        runs, attempts = first[5], first[6]
        run_columns = [c["name"] for c in first[7]]
        self.assertIn("confidence_reason", run_columns)
        self.assertEqual([list(r) for r in runs], [run_columns] * 3)
        self.assertEqual([list(a) for a in attempts], [ATTEMPT_COLUMNS] * len(attempts))
        # Not a row of NULLs: what the runs did is there to be kept.
        self.assertEqual([(r["status"], r["rows"], r["feedback"], r["cached_from"]) for r in runs],
                         [("ok", 1, "good", None), ("failed", None, None, None), ("ok", 1, None, 1)])
        self.assertEqual(runs[1]["error_type"], "table_not_found")
        # review is 1 by default: the answer the model gave was reviewed; the
        # failed run and the cached answer were not.
        self.assertEqual([r["review"] for r in runs], ["accepted", "not reviewed", "not reviewed"])
        self.assertTrue(all(r["node_times"] and r["created_at"] and r["duration_ms"] > 0 for r in runs))
        self.assertTrue(attempts[1]["hint"] or attempts[1]["error"])
        second = self.session([
            "SELECT agent_config('history_file', '%s')" % path,
            "SELECT * FROM agent_runs",
            "SELECT * FROM agent_attempts",
        ], script)
        # Every column of every run and attempt, as the connection that ran them showed it.
        self.assertEqual(second[1], runs)
        self.assertEqual(second[2], attempts)

    def test_the_database_itself_or_a_late_setting_is_refused(self):
        res = self.session([
            "SELECT agent_config('history_file', '%s')" % self.db,
            "SELECT * FROM ask('How many orders are there?')",
            "SELECT agent_config('history_file', '%s')" % os.path.join(self.tmp, "late.db"),
            "SELECT agent_config('history_file') AS f",
        ], {"rules": [{"match": "orders are there", "replies": [sql_reply(COUNT_SQL)]}]})
        self.assertIn("never a database of this connection", res[0])
        # The ask settled the default history file of the database: another
        # one is for a new connection.
        self.assertIn("history_file is already ", res[2])
        self.assertIn("(the default for this database); open a new connection for another", res[2])
        self.assertTrue(res[3][0]["f"].endswith(".qphistory"), res[3])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "late.db")))
        # Memory only (off), then a file after the first ask: refused.
        off = self.session([
            "SELECT * FROM ask('How many orders are there?')",
            "SELECT agent_config('history_file', '%s')" % os.path.join(self.tmp, "late.db"),
            "SELECT agent_config('history_file') AS f",
        ], {"rules": [{"match": "orders are there", "replies": [sql_reply(COUNT_SQL)]}]},
            QUERYPILOT_HISTORY_FILE="off")
        self.assertIn("before the first ask", off[1])
        self.assertEqual(off[2], [{"f": "off"}])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "late.db")))


# Another process holding the history file locked until told to let go.
HOLD_LOCK = r"""
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
con.execute("COMMIT")
"""

HISTORY_SCRIPT = {"rules": [
    {"match": "orders are there", "replies": [sql_reply(COUNT_SQL)]},
    {"match": "revenue", "replies": [sql_reply("SELECT SUM(price) AS revenue FROM products")]}]}


class HeldLock:
    def __init__(self, path):
        self.proc = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, path], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if line != "locked":
            self.release()
            raise AssertionError("the other process did not lock %s: %r" % (path, line))

    def release(self):
        if self.proc.poll() is None:
            self.proc.stdin.write("\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        self.proc.stdout.close()


class HistoryFileFaultTest(LLMTestCase):
    """A write QueryPilot cannot make to its history file is never silent:
    the answer comes back, agent_runs.not_kept says what the file did not
    keep, and agent_forget, agent_feedback and agent_describe fail whole."""

    def open(self, path, db=None):
        self.llm.load(HISTORY_SCRIPT)
        con = connect(db or self.db, self.llm.env(), isolation_level=None)
        self.addCleanup(con.close)
        if path:
            con.execute("SELECT agent_config('history_file', ?)", (path,))
        return con

    def file_rows(self, path):
        con = sqlite3.connect(path)
        try:
            return (con.execute("SELECT group_concat(id) FROM querypilot_runs").fetchone()[0],
                    con.execute("SELECT group_concat(run_id) FROM querypilot_attempts").fetchone()[0])
        finally:
            con.close()

    def test_a_lock_held_by_another_process_is_named_and_nothing_is_lost_silently(self):
        path = os.path.join(self.tmp, "history.db")
        before = file_digest(self.db)
        con = self.open(path)
        self.assertEqual(con.execute("SELECT row FROM ask('How many orders are there?')").fetchall(),
                         [('{"n":100}',)])
        lock = HeldLock(path)
        try:
            # The ask does not fail: its answer comes back, and the run says
            # what the file did not keep.
            self.assertEqual(con.execute("SELECT row FROM ask('What is the revenue?')").fetchall(),
                             [('{"revenue":1162.9}',)])
            runs = con.execute("SELECT id, not_kept FROM agent_runs").fetchall()
            self.assertEqual(runs[0], (1, None))
            self.assertEqual(runs[1][0], 2)
            self.assertIn("history_file did not keep this run (locked by another connection, still after 250 ms: "
                          "database is locked); it lasts only as long as this connection", runs[1][1])
            # A forgetting, a verdict or a description the file could not
            # keep fails, and changes nothing.
            with self.assertRaises(sqlite3.OperationalError) as forget:
                con.execute("SELECT agent_forget(1)").fetchall()
            self.assertIn("agent_forget(): run 1 is not forgotten: history_file could not be written (locked by "
                          "another connection", str(forget.exception))
            with self.assertRaises(sqlite3.OperationalError) as verdict:
                con.execute("SELECT agent_feedback(1, 'bad')").fetchall()
            self.assertIn("the verdict on run 1 is not recorded", str(verdict.exception))
            with self.assertRaises(sqlite3.OperationalError) as describe:
                con.execute("SELECT agent_describe('orders', 'one row per order')").fetchall()
            self.assertIn("the description of orders is not changed", str(describe.exception))
            self.assertEqual(con.execute("SELECT id, feedback FROM agent_runs").fetchall(), [(1, None), (2, None)])
            self.assertEqual(con.execute("SELECT run_id FROM agent_attempts").fetchall(), [(1,), (2,)])
            self.assertEqual(con.execute("SELECT count(*) FROM agent_descriptions").fetchone(), (0,))
            # A connection setting the file now reads what was committed:
            # the file is in WAL mode, where a writer's lock holds up no
            # reader.
            other = self.open(None)
            other.execute("SELECT agent_config('history_file', ?)", (path,)).fetchall()
            self.assertEqual(other.execute("SELECT agent_config('history_file')").fetchone(), (path,))
            self.assertEqual(other.execute("SELECT id FROM agent_runs").fetchall(), [(1,)])
        finally:
            lock.release()
        self.assertEqual(self.file_rows(path), ("1", "1"))
        # Once the lock is gone: the forgetting is written, and the next
        # change to run 2 writes it whole, with its attempt.
        self.assertEqual(con.execute("SELECT agent_forget(1)").fetchone(), (1,))
        self.assertEqual(con.execute("SELECT agent_feedback(2, 'good')").fetchone(), ("good",))
        self.assertEqual(con.execute("SELECT id, feedback, not_kept FROM agent_runs").fetchall(),
                         [(2, "good", None)])
        self.assertEqual(self.file_rows(path), ("2", "2"))
        again = self.session(["SELECT agent_config('history_file', '%s')" % path,
                              "SELECT id, feedback FROM agent_runs"], HISTORY_SCRIPT)
        self.assertEqual(again[1], [{"id": 2, "feedback": "good"}])
        self.assertEqual(file_digest(self.db), before)

    def test_a_history_file_opened_read_only_is_refused(self):
        path = os.path.join(self.tmp, "history.db")
        first = self.session(["SELECT agent_config('history_file', '%s')" % path,
                              "SELECT * FROM ask('How many orders are there?')"], HISTORY_SCRIPT)
        self.assertNotIsInstance(first[1], ShellError, first[1])
        res = self.session(["SELECT agent_config('history_file', 'file:%s?mode=ro')" % path,
                            "SELECT agent_config('history_file') AS f"], HISTORY_SCRIPT)
        self.assertIsInstance(res[0], ShellError)
        self.assertIn("is read-only here", res[0])
        self.assertIn("could keep no run in it", res[0])
        self.assertEqual(res[1], [{"f": ""}])

    def mount_small_tmpfs(self):
        mnt = os.path.join(self.tmp, "small")
        os.mkdir(mnt)
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt], capture_output=True, text=True)
        if p.returncode != 0:
            self.skipTest("a full or read-only disk needs a small tmpfs mounted, which needs root here: %s"
                          % (p.stderr.strip() or p.returncode))
        self.addCleanup(subprocess.run, ["umount", "-l", mnt], capture_output=True)
        return mnt

    def test_a_full_disk_and_a_read_only_file_system(self):
        mnt = self.mount_small_tmpfs()
        path = os.path.join(mnt, "history.db")
        con = self.open(path)
        self.assertEqual(con.execute("SELECT row FROM ask('How many orders are there?')").fetchall(),
                         [('{"n":100}',)])
        filler = os.path.join(mnt, "filler")
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError as e:
            self.assertEqual(e.errno, errno.ENOSPC)
        finally:
            os.close(fd)
        self.assertEqual(con.execute("SELECT row FROM ask('What is the revenue?')").fetchall(),
                         [('{"revenue":1162.9}',)])
        not_kept = con.execute("SELECT not_kept FROM agent_runs WHERE id = 2").fetchone()[0]
        self.assertIn("history_file did not keep this run (database or disk is full)", not_kept)
        with self.assertRaises(sqlite3.OperationalError) as forget:
            con.execute("SELECT agent_forget(1)").fetchall()
        self.assertIn("run 1 is not forgotten: history_file could not be written (database or disk is full)",
                      str(forget.exception))
        self.assertEqual(con.execute("SELECT group_concat(id) FROM agent_runs").fetchone(), ("1,2",))
        os.remove(filler)
        self.assertEqual(con.execute("SELECT agent_forget(1)").fetchone(), (1,))
        self.assertEqual(self.file_rows(path), (None, None))
        con.close()
        # No file open for writing on it now: the file system can be made
        # read-only, and the history file there is refused.
        p = subprocess.run(["mount", "-o", "remount,ro", mnt], capture_output=True, text=True)
        if p.returncode != 0:
            self.skipTest("could not remount the tmpfs read-only: %s" % p.stderr.strip())
        res = self.session(["SELECT agent_config('history_file', '%s')" % path], HISTORY_SCRIPT)
        self.assertIsInstance(res[0], ShellError)
        self.assertIn("is read-only here", res[0])


class ForgetTest(LLMTestCase):
    def test_a_forgotten_run_is_gone_from_the_record_the_cache_the_examples_and_the_file(self):
        path = os.path.join(self.tmp, "history.db")
        script = {"rules": [
            {"match": "Question: How many orders were refunded", "replies": [sql_reply(REFUNDED_SQL)]},
            {"match": "Question: Count the refunded", "replies": [sql_reply(REFUNDED_SQL)]},
            {"match": "orders are there", "replies": [sql_reply(COUNT_SQL)]}]}
        before = file_digest(self.db)
        res = self.session([
            "SELECT agent_config('history_file', '%s')" % path,
            "SELECT * FROM ask('How many orders were refunded?')",   # 1: cached, and taught below
            "SELECT * FROM ask('How many orders are there?')",       # 2
            "SELECT agent_feedback(1, 'good') AS v",
            "SELECT agent_forget(1) AS f",
            "SELECT id FROM agent_runs",
            "SELECT run_id FROM agent_attempts",
            "SELECT * FROM ask('How many orders were refunded?')",   # 3: the model again
            "SELECT * FROM ask('Count the refunded orders')",        # 4: no example
            "SELECT * FROM ask('How many orders are there?')",       # 5: still cached from 2
            "SELECT id, llm_calls, cached_from, examples FROM agent_runs",
            "SELECT agent_forget(1)",
            "SELECT agent_forget('1')",
            "SELECT agent_forget(NULL)",
        ], script)
        self.assertEqual(res[3], [{"v": "good"}])
        self.assertEqual(res[4], [{"f": 1}])
        self.assertEqual(res[5], [{"id": 2}])
        self.assertEqual(res[6], [{"run_id": 2}])
        self.assertEqual(res[7], [{"row": '{"n":11}'}])
        self.assertEqual(res[10], [
            {"id": 2, "llm_calls": 2, "cached_from": None, "examples": None},  # each with its review
            {"id": 3, "llm_calls": 2, "cached_from": None, "examples": None},
            {"id": 4, "llm_calls": 2, "cached_from": None, "examples": None},
            {"id": 5, "llm_calls": 0, "cached_from": 2, "examples": None},
        ])
        self.assertIn("agent_forget(): there is no run 1 in agent_runs", res[11])
        self.assertIn("agent_forget(): the first argument is a run id", res[12])
        self.assertIn("agent_forget(): the first argument is a run id", res[13])
        # The taught example never reached a prompt after it was forgotten.
        last = [m["content"] for m in self.llm.log()[-1]["body"]["messages"] if m["role"] == "user"]
        self.assertIn("Count the refunded orders", last[-1])
        self.assertNotIn("Q: How many orders were refunded?", "\n".join(last))
        con = sqlite3.connect(path)
        self.assertEqual(con.execute("SELECT group_concat(id) FROM querypilot_runs").fetchone(), ("2,3,4,5",))
        self.assertEqual(con.execute("SELECT COUNT(*) FROM querypilot_attempts WHERE run_id = 1").fetchone(), (0,))
        con.close()
        # A new connection reading the file does not bring it back.
        again = self.session(["SELECT agent_config('history_file', '%s')" % path,
                              "SELECT min(id) AS first FROM agent_runs"], script)
        self.assertEqual(again[1], [{"first": 2}])
        self.assertEqual(file_digest(self.db), before)


class MetricsTest(LLMTestCase):
    def test_agent_metrics_sums_up_the_history(self):
        res = self.session([
            "SELECT * FROM ask('How many orders are there?')",
            "SELECT * FROM ask('How many orders are there?')",
            "SELECT * FROM ask('What is the revenue per category?')",
            "SELECT metric, value, typeof(value) AS type FROM agent_metrics WHERE metric IN ('runs', 'answered', "
            "'first_attempt_success_rate', 'correction_effectiveness', 'cached_runs', 'llm_calls', "
            "'error:column_not_found') ORDER BY metric",
        ], {"rules": [
            {"match": "orders are there", "replies": [sql_reply(COUNT_SQL)]},
            {"match": "revenue", "replies": [sql_reply("SELECT category, SUM(nope) FROM products"),
                                             sql_reply("SELECT category, SUM(price) AS revenue FROM products GROUP BY category")]},
        ]})
        self.assertEqual(res[-1], [
            # Counts are integers (runs|3, not 3.0); rates are reals.
            {"metric": "answered", "value": 3, "type": "integer"},
            {"metric": "cached_runs", "value": 1, "type": "integer"},
            {"metric": "correction_effectiveness", "value": 1.0, "type": "real"},
            {"metric": "error:column_not_found", "value": 1, "type": "integer"},
            {"metric": "first_attempt_success_rate", "value": 0.5, "type": "real"},
            {"metric": "llm_calls", "value": 5, "type": "integer"},  # 3 generations, 2 reviews
            {"metric": "runs", "value": 3, "type": "integer"},
        ])


if __name__ == "__main__":
    unittest.main()


class RunLookupTest(LLMTestCase):
    """agent_runs and agent_attempts serve their key (id, run_id): a lookup of
    one run reads that run alone, and ORDER BY id comes in order, with every
    form of query giving what a scan of all the rows gives (a copy in a temp
    table, read the same way). Runs numbered with a gap (one forgotten), one
    of two attempts, one with feedback."""

    QUERIES = [
        "SELECT id, status, attempts FROM {r} WHERE id = 3",
        "SELECT id FROM {r} WHERE id = '3'",
        "SELECT id FROM {r} WHERE id = 3.0",
        "SELECT id FROM {r} WHERE id = 3.5",
        "SELECT id FROM {r} WHERE id = NULL",
        "SELECT id FROM {r} WHERE id = 99",
        "SELECT id FROM {r} WHERE id IN (1, 4, 2, 99) ORDER BY id DESC",
        "SELECT id FROM {r} WHERE id = 2 OR id = 5 ORDER BY id",
        "SELECT id, feedback FROM {r} ORDER BY id DESC LIMIT 2",
        "SELECT id FROM {r} ORDER BY id",
        "SELECT id FROM {r} WHERE status = 'ok' ORDER BY id DESC LIMIT 1",
        "SELECT id FROM {r} ORDER BY id DESC, question",
        "SELECT run_id, attempt, error_type FROM {a} WHERE run_id = 2 ORDER BY attempt",
        "SELECT run_id, attempt FROM {a} ORDER BY run_id DESC, attempt",
        "SELECT r.id, a.attempt FROM {r} AS r JOIN {a} AS a ON a.run_id = r.id ORDER BY r.id, a.attempt",
        "SELECT (SELECT count(*) FROM {a} WHERE run_id = r.id) AS n FROM {r} AS r ORDER BY r.id",
    ]

    def test_lookups_and_orders_by_the_key_give_what_a_whole_scan_gives(self):
        asks = ["SELECT * FROM ask('How many orders are there?')",
                "SELECT * FROM ask('Which products sell per category?')",
                "SELECT * FROM ask('How many customers are there?')",
                "SELECT agent_forget(3)",
                "SELECT * FROM ask('How many orders shipped?')",
                "SELECT * FROM ask('How many customers are there in all?')",
                "SELECT agent_feedback(2, 'good')",
                "CREATE TEMP TABLE r AS SELECT * FROM agent_runs",
                "CREATE TEMP TABLE a AS SELECT * FROM agent_attempts",
                "SELECT count(*) AS n FROM r",
                "SELECT count(*) AS n FROM a"]
        lookups = []
        for q in self.QUERIES:
            lookups += [q.format(r="agent_runs", a="agent_attempts"), q.format(r="temp.r", a="temp.a")]
        res = self.session(asks + lookups, {"rules": [
            {"match": "per category", "replies": [
                sql_reply("SELECT category, count(*) AS n FROM product GROUP BY category"),
                sql_reply("SELECT category, count(*) AS n FROM products GROUP BY category")]},
            {"match": "orders shipped", "replies": [
                sql_reply("SELECT count(*) AS n FROM orders WHERE status = 'shipped'")]},
            {"match": "orders", "replies": [sql_reply(COUNT_SQL)]},
            {"match": "customers", "replies": [sql_reply("SELECT count(*) AS n FROM customers")]},
        ]})
        self.assertEqual(res[9], [{"n": 4}])  # runs 1, 2, 4 and 5
        self.assertGreaterEqual(res[10][0]["n"], 5)  # run 2 made two attempts
        offset = len(asks)
        for k, q in enumerate(self.QUERIES):
            served, scanned = res[offset + 2 * k], res[offset + 2 * k + 1]
            self.assertEqual(served, scanned, q)
        # What they found, for the few whose answer is plain.
        self.assertEqual(res[offset], [])  # run 3 was forgotten
        self.assertEqual(res[offset + 2 * 6], [{"id": 4}, {"id": 2}, {"id": 1}])
        self.assertEqual([row["id"] for row in res[offset + 2 * 8]], [5, 4])
        self.assertEqual([row["attempt"] for row in res[offset + 2 * 12]], [1, 2])

    def test_the_plan_reads_one_run_by_its_id_and_the_newest_first_without_sorting(self):
        self.llm.load({"rules": []})
        con = connect(self.db, self.llm.env("openai"))
        self.addCleanup(con.close)
        details = [" | ".join(row[3] for row in con.execute("EXPLAIN QUERY PLAN " + q)) for q in [
            "SELECT * FROM agent_runs WHERE id = 7",
            "SELECT * FROM agent_attempts WHERE run_id = 7",
            "SELECT * FROM agent_runs ORDER BY id DESC LIMIT 1",
            "SELECT * FROM agent_attempts ORDER BY run_id",
            "SELECT * FROM agent_metrics",
        ]]
        self.assertIn("VIRTUAL TABLE INDEX 1:", details[0])  # the key's value
        self.assertIn("VIRTUAL TABLE INDEX 1:", details[1])
        self.assertIn("VIRTUAL TABLE INDEX 4:", details[2])  # descending, no sorter
        self.assertNotIn("B-TREE", details[2])
        self.assertIn("VIRTUAL TABLE INDEX 2:", details[3])
        self.assertIn("VIRTUAL TABLE INDEX 0:", details[4])  # a table with no key
