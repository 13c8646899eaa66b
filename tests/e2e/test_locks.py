"""Locks: an ask holds no lock on the user's database file while its model
answers, so another process can write the file meanwhile (rollback-journal
mode, SQLite's default, where any reader's SHARED lock stops a commit).

Each test starts an ask against a model that holds its reply, waits until the
request has reached the model, commits a write from another process with a
busy timeout of 0 (it succeeds only if nothing holds the file), and only then
lets the model reply: no step depends on how fast the machine is."""
import os
import sqlite3
import subprocess
import sys
import threading
import unittest

from harness import EXTENSION, SQLITE3, LLMTestCase, connect, sql_reply

WRITE = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)
con.execute("BEGIN IMMEDIATE")
con.execute("INSERT INTO %s VALUES ('written while the model thought')" % sys.argv[2])
con.execute("COMMIT")
"""


class ModelCallHoldsNoLockTest(LLMTestCase):
    def setUp(self):
        super().setUp()
        con = sqlite3.connect(self.db)
        self.assertEqual(con.execute("PRAGMA journal_mode").fetchone()[0], "delete")
        con.execute("CREATE TABLE notes(body TEXT)")
        con.commit()
        con.close()

    def held(self, sql):
        # The reply waits for self.llm.release().
        return {"rules": [{"match": "", "replies": [{"content": sql_reply(sql), "hold": True}]}]}

    def write_from_another_process(self, db=None, table="notes"):
        p = subprocess.run([sys.executable, "-c", WRITE, db or self.db, table], capture_output=True, text=True,
                           timeout=120)
        return p.returncode, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""

    def test_python_a_writer_commits_while_the_model_answers(self):
        self.ask_while_another_process_writes({})

    def test_with_history_and_index_files_a_writer_commits_while_the_model_answers(self):
        # Checking that those files are none of the database's reads the
        # connection's list of databases at every ask: without a lock.
        self.ask_while_another_process_writes({
            "history_file": os.path.join(self.tmp, "history.qp"),
            "value_index_file": os.path.join(self.tmp, "values.qpindex")})

    def ask_while_another_process_writes(self, settings):
        self.llm.load(self.held("SELECT count(*) AS n FROM orders"))
        con = connect(self.db, self.llm.env(), check_same_thread=False)
        self.addCleanup(con.close)
        for key, value in settings.items():
            con.execute("SELECT agent_config(?, ?)", (key, value))
        result = {}
        t = threading.Thread(target=lambda: result.setdefault(
            "rows", con.execute("SELECT row FROM ask('How many orders are there?')").fetchall()))
        t.start()
        self.llm.wait_for_requests()
        rc, err = self.write_from_another_process()
        self.llm.release()
        t.join()
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(result["rows"], [('{"n":100}',)])
        # The prompt was written from the schema all the same.
        self.assertIn("CREATE TABLE orders", self.llm.log()[0]["body"]["messages"][0]["content"])

    def test_shell_a_writer_commits_while_the_model_answers_and_to_an_attached_file(self):
        other = os.path.join(self.tmp, "other.db")
        con = sqlite3.connect(other)
        con.execute("CREATE TABLE memo(body TEXT)")
        con.commit()
        con.close()
        self.llm.load(self.held("SELECT count(*) AS n FROM other.memo"))
        shell = subprocess.Popen([SQLITE3, "-batch", self.db], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, env=self.llm.env())
        shell.stdin.write(".load %s\nATTACH '%s' AS other;\nSELECT row FROM ask('How many memos are there?');\n"
                          % (EXTENSION, other))
        shell.stdin.flush()
        self.llm.wait_for_requests()
        main_write = self.write_from_another_process()
        other_write = self.write_from_another_process(other, "memo")
        self.llm.release()
        out = shell.communicate(timeout=300)[0]
        self.assertEqual(main_write, (0, ""))
        self.assertEqual(other_write, (0, ""))
        # The answer counts the memo committed while the model answered: the
        # query ran after it, on the shell's own connection.
        self.assertIn('{"n":1}', out)
        self.assertIn("other.memo", self.llm.log()[0]["body"]["messages"][0]["content"])

    def test_a_temp_table_of_the_host_is_still_in_the_prompt_and_answered(self):
        # A temp table only the host connection has: the schema is read there.
        self.llm.load({"rules": [{"match": "", "replies": [sql_reply("SELECT count(*) AS n FROM scratch")]}]})
        con = connect(self.db, self.llm.env())
        self.addCleanup(con.close)
        con.execute("CREATE TEMP TABLE scratch(x)")
        con.execute("INSERT INTO scratch VALUES (1), (2)")
        rows = con.execute("SELECT row FROM ask('How many rows does scratch have?')").fetchall()
        self.assertEqual(rows, [('{"n":2}',)])
        self.assertIn("scratch", self.llm.log()[0]["body"]["messages"][0]["content"])

    def test_uncommitted_rows_of_the_host_are_answered(self):
        # In a transaction the host's own writes are seen only by it: it reads.
        self.llm.load({"rules": [{"match": "", "replies": [sql_reply("SELECT count(*) AS n FROM notes")]}]})
        con = connect(self.db, self.llm.env(), isolation_level=None)
        self.addCleanup(con.close)
        con.execute("BEGIN")
        con.execute("INSERT INTO notes VALUES ('not committed yet')")
        rows = con.execute("SELECT row FROM ask('How many notes are there?')").fetchall()
        con.execute("ROLLBACK")
        self.assertEqual(rows, [('{"n":1}',)])


if __name__ == "__main__":
    unittest.main()
