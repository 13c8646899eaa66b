"""A load, ask and close cycle in the real sqlite3 shell, under valgrind:
no invalid read or write, no use of uninitialised memory, and nothing
definitely or indirectly lost. (Skipped in a sanitizer build, whose runtime
cannot run under valgrind.)"""
import os
import re
import shutil
import subprocess
import unittest

from harness import EXTENSION, SQLITE3, LLMTestCase, sql_reply

VALGRIND = shutil.which("valgrind")


@unittest.skipIf(not VALGRIND, "valgrind is not installed (scripts/install-deps.sh installs it)")
@unittest.skipIf(os.environ.get("QP_SANITIZE"), "a sanitizer build cannot run under valgrind")
class ValgrindTest(LLMTestCase):
    def test_load_ask_close_is_clean(self):
        self.llm.load({"rules": [
            {"match": "How many", "replies": [sql_reply("SELECT COUNT(*) AS n FROM orders")]},
            {"match": "revenue", "replies": [sql_reply("SELECT category, SUM(nope) FROM products"),
                                             sql_reply("SELECT category, SUM(price) AS revenue FROM products GROUP BY category")]},
            {"match": "Delete", "replies": [sql_reply("DELETE FROM orders")]},
        ]})
        script = "\n".join([
            ".load %s" % EXTENSION,
            "SELECT * FROM ask('How many orders are there?');",
            "SELECT * FROM ask('What is the revenue per category?');",
            "SELECT * FROM ask('Delete the refunded orders');",
            "SELECT COUNT(*) FROM agent_runs;",
            "SELECT COUNT(*) FROM agent_attempts;",
            "SELECT agent_config();",
        ]) + "\n"
        log = os.path.join(self.tmp, "valgrind.log")
        p = subprocess.run([VALGRIND, "--leak-check=full", "--errors-for-leak-kinds=definite,indirect",
                            "--show-leak-kinds=definite,indirect", "--error-exitcode=99",
                            "--log-file=%s" % log, SQLITE3, "-batch", self.db],
                           input=script, capture_output=True, text=True, env=self.llm.env(), timeout=600)
        with open(log) as f:
            report = f.read()
        # The shell exits 1 because one ask is refused; valgrind's own is 99.
        self.assertIn(p.returncode, (0, 1), report[-4000:] + p.stdout + p.stderr)
        self.assertIn('{"n":100}', p.stdout)
        self.assertIn("refused", p.stdout + p.stderr)
        summary = re.search(r"ERROR SUMMARY: (\d+) errors", report)
        self.assertIsNotNone(summary, report[-2000:])
        self.assertEqual(summary.group(1), "0", report[-4000:])
        for kind in ("definitely lost", "indirectly lost"):
            m = re.search(kind + r": ([\d,]+) bytes", report)
            if m:
                self.assertEqual(m.group(1), "0", report[-4000:])


if __name__ == "__main__":
    unittest.main()
