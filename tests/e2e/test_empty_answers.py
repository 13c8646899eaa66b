"""An answer with no rows that QueryPilot doubts (a critical finding still
standing, or a review that did not accept it) is an error that says why, in
the sqlite3 shell, Python's sqlite3 module, Node.js clients and ask_result
alike; agent_config('empty_doubtful', 'rows') gives it as an empty result.
An empty answer nothing doubts stays a plain empty result. Every test talks
to the scripted model on 127.0.0.1."""
import json
import os
import shutil
import sqlite3
import subprocess
import unittest

from harness import EXTENSION, SOURCE_DIR, LLMTestCase, ShellError, connect, install_node_clients, sql_reply

# 'france' does not occur in customers.country (it has 'France'): no rows,
# and value grounding's critical finding stands with max_attempts 1.
WRONG = "SELECT name FROM customers WHERE country = 'france'"
WRONG_SCRIPT = {"rules": [{"match": "customers live in", "replies": [sql_reply(WRONG)]}]}
QUESTION = "Which customers live in france?"
# No rows, and nothing to doubt: no product costs that much.
NONE = "SELECT id, name FROM products WHERE price > 1000000000"
NONE_SCRIPT = {"rules": [{"match": "expensive", "replies": [sql_reply(NONE)]}]}
REVIEW = "The tables the query reads"  # only a review request holds this line
SANITIZED = bool(os.environ.get("QP_SANITIZE"))


def shell_error(result):
    return isinstance(result, ShellError)


class ShellTest(LLMTestCase):
    def test_a_doubtful_empty_answer_is_an_error_that_says_why(self):
        answer, runs = self.session([
            "SELECT * FROM ask('%s')" % QUESTION,
            "SELECT id, status, rows, confidence < 50 AS low, sql FROM agent_runs",
        ], WRONG_SCRIPT, QUERYPILOT_MAX_ATTEMPTS="1")
        self.assertTrue(shell_error(answer), answer)
        self.assertIn("the answer has no rows, and QueryPilot doubts it", answer)
        self.assertIn("'france'", answer)  # the finding's own words
        self.assertIn("France", answer)
        self.assertRegex(answer, r"\(confidence \d+\)")
        self.assertIn("[run %d: SELECT * FROM agent_attempts WHERE run_id = %d]" % (runs[0]["id"], runs[0]["id"]),
                      answer)
        self.assertIn("agent_config('empty_doubtful', 'rows')", answer)
        # The run is recorded as it ended.
        self.assertEqual(runs, [{"id": runs[0]["id"], "status": "ok", "rows": 0, "low": 1, "sql": WRONG}])

    def test_empty_doubtful_rows_gives_the_empty_result(self):
        setting, answer, runs = self.session([
            "SELECT agent_config('empty_doubtful', 'rows') AS v",
            "SELECT * FROM ask('%s')" % QUESTION,
            "SELECT status, rows FROM agent_runs",
        ], WRONG_SCRIPT, QUERYPILOT_MAX_ATTEMPTS="1")
        self.assertFalse(shell_error(answer), answer)
        self.assertEqual(answer, [])
        self.assertEqual(runs, [{"status": "ok", "rows": 0}])

    def test_the_setting_takes_error_or_rows_only(self):
        res = self.session(["SELECT agent_config('empty_doubtful', 'maybe')",
                            "SELECT agent_config('empty_doubtful') AS v"], WRONG_SCRIPT)
        self.assertTrue(shell_error(res[0]), res[0])
        self.assertIn("empty_doubtful must be 'error' or 'rows'", res[0])
        self.assertEqual(res[1], [{"v": "error"}])

    def test_an_empty_answer_nothing_doubts_is_a_plain_empty_result(self):
        answer, runs = self.session([
            "SELECT * FROM ask('Which products are very expensive?')",
            "SELECT status, rows, attempts FROM agent_runs",
        ], NONE_SCRIPT)
        self.assertFalse(shell_error(answer), answer)
        self.assertEqual(answer, [])
        self.assertEqual(runs, [{"status": "ok", "rows": 0, "attempts": 1}])

    def test_an_empty_answer_its_review_does_not_accept_says_the_reviews_reason(self):
        review = json.dumps({"is_acceptable": False, "should_refine": False,
                             "issues": ["the question asks for all expensive products"],
                             "reasoning": "no product is above a billion; the threshold is invented"})
        script = {"rules": [{"match": REVIEW, "review": True, "replies": [review]}] + NONE_SCRIPT["rules"]}
        answer, runs = self.session([
            "SELECT * FROM ask('Which products are very expensive?')",
            "SELECT status, review, rows FROM agent_runs",
        ], script, QUERYPILOT_REVIEW="1")
        self.assertTrue(shell_error(answer), answer)
        self.assertIn("its review did not accept it: no product is above a billion", answer)
        self.assertEqual(runs, [{"status": "ok", "review": "not accepted", "rows": 0}])


class PythonTest(LLMTestCase):
    def test_python_gets_the_error_and_the_async_ask_too(self):
        self.llm.load({"rules": [{"match": "customers live in", "replies": [sql_reply(WRONG)] * 2}]})
        con = connect(self.db, self.llm.env(QUERYPILOT_MAX_ATTEMPTS="1"))
        self.addCleanup(con.close)
        with self.assertRaises(sqlite3.OperationalError) as e:
            con.execute("SELECT * FROM ask(?)", (QUESTION,)).fetchall()
        self.assertIn("QueryPilot doubts it", str(e.exception))
        self.assertIn("'france'", str(e.exception))
        # ask_start / ask_result: the same error once the run ends.
        run_id = con.execute("SELECT ask_start(?)", (QUESTION,)).fetchone()[0]
        with self.assertRaises(sqlite3.OperationalError) as e:
            con.execute("SELECT * FROM ask_result(?, 30000)", (run_id,)).fetchall()
        self.assertIn("QueryPilot doubts it", str(e.exception))
        self.assertEqual(con.execute("SELECT ask_state(?)", (run_id,)).fetchone()[0], "failed")
        # With 'rows', an empty result.
        con.execute("SELECT agent_config('empty_doubtful', 'rows')")
        self.assertEqual(con.execute("SELECT * FROM ask(?)", (QUESTION + " ",)).fetchall(), [])


@unittest.skipIf(SANITIZED, "Node.js clients run in the Release suite")
class NodeTest(LLMTestCase):
    def test_node_clients_get_the_error(self):
        modules = install_node_clients()
        script = os.path.join(SOURCE_DIR, "tests", "clients", "node_client.js")
        for module in ("better-sqlite3", "libsql"):
            with self.subTest(module=module):
                self.llm.load(WRONG_SCRIPT)
                env = dict(self.llm.env(QUERYPILOT_MAX_ATTEMPTS="1"))
                env.pop("LD_PRELOAD", None)
                env["NODE_PATH"] = modules
                p = subprocess.run([shutil.which("node"), script, module, self.db, EXTENSION, json.dumps([
                    "SELECT * FROM ask('%s')" % QUESTION,
                    "SELECT agent_config('empty_doubtful', 'rows')",
                    "SELECT row FROM ask('%s')" % QUESTION,
                ])], capture_output=True, text=True, env=env, timeout=120)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                out = [json.loads(line) for line in p.stdout.splitlines()]
                self.assertIn("QueryPilot doubts it", out[0].get("error", ""), out[0])
                self.assertEqual(out[2], {"columns": ["row"], "rows": []})


if __name__ == "__main__":
    unittest.main()
