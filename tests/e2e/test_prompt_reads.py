"""What an ask reads for its prompt (the schema, sample rows, value hints)
goes through the host's rules as they are at that ask, views included; every
such read ends within its documented bound (docs/safety.md), stops on the
host's interrupt, and agent_runs.stopped_reads says what stopped one; and the
schema another connection changed is the one the next prompt shows."""
import json
import os
import re
import signal
import sqlite3
import subprocess
import threading
import time
import unittest

from harness import EXTENSION, SQLITE3, TIMED, LLMTestCase, connect, sql_reply

SSNS = ["111-22-3333", "444-55-6666"]

# A view whose one row never comes: count(*) over an endless recursion.
ENDLESS = ("CREATE VIEW {name} AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
           "SELECT count(*) AS n FROM c")


def blank_ssn(action, table, column, db, trigger):
    if action == sqlite3.SQLITE_READ and table == "users" and column == "ssn":
        return sqlite3.SQLITE_IGNORE
    return sqlite3.SQLITE_OK


class PromptReadsTest(LLMTestCase):
    def setUp(self):
        super().setUp()
        con = sqlite3.connect(self.db)
        con.executescript("""
            CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT, ssn TEXT);
            INSERT INTO users VALUES (1, 'Ann Example', '111-22-3333'), (2, 'Bob Example', '444-55-6666');
            CREATE VIEW people AS SELECT name, ssn FROM users;
            CREATE VIEW known AS SELECT name FROM users WHERE ssn LIKE '1%';
        """)
        con.commit()
        con.close()
        self.llm.load({"rules": [{"match": "", "replies": [sql_reply("SELECT count(*) AS n FROM users")]}]})

    def connect(self, **kwargs):
        con = connect(self.db, self.llm.env(), **kwargs)
        self.addCleanup(con.close)
        return con

    def ask(self, con, question):
        return [json.loads(r) for (r,) in con.execute("SELECT row FROM ask(?)", (question,))]

    def last_prompt(self):
        messages = self.llm.log()[-1]["body"]["messages"]
        return messages[0]["content"], json.dumps(messages)

    def assert_no_ssn(self, everything):
        for ssn in SSNS:
            self.assertNotIn(ssn, everything)

    def test_a_column_blanked_in_a_table_is_left_out_of_views_over_it_too(self):
        con = self.connect()
        con.set_authorizer(blank_ssn)
        self.assertEqual(self.ask(con, "How many users are there?"), [{"n": 2}])
        system, everything = self.last_prompt()
        self.assert_no_ssn(everything)
        self.assertNotIn("ssn", system)
        # The view's other column is still shown, with its values...
        self.assertIn("CREATE VIEW people", system)
        self.assertIn("'Ann Example'", system)
        # ... but a view that filters on the blanked column is not: its rows
        # would tell what the host hides.
        self.assertNotIn("CREATE VIEW known", system)

    def test_an_authorizer_set_after_the_first_ask_counts_at_the_next_and_its_removal_too(self):
        con = self.connect()
        self.ask(con, "How many users are there?")
        system, everything = self.last_prompt()
        self.assertIn("111-22-3333", everything)  # the host's rules allow it: shown
        con.set_authorizer(blank_ssn)
        # A question naming a value: without the rules it would be hinted.
        self.ask(con, "Who has the number 444-55-6666?")
        system, everything = self.last_prompt()
        self.assertNotIn("ssn", everything)
        self.assertNotIn("111-22-3333", everything)
        con.set_authorizer(None)
        self.ask(con, "Who has the number 444-55-6666 again?")
        system, everything = self.last_prompt()
        self.assertIn("111-22-3333", system)
        # The value hint names the column again.
        question = self.llm.log()[-1]["body"]["messages"][1]["content"]
        self.assertIn("users.ssn", question)

    def test_a_denied_column_set_after_the_first_ask_is_left_out(self):
        con = self.connect()
        self.ask(con, "How many users are there?")
        con.set_authorizer(lambda action, table, column, db, trigger: sqlite3.SQLITE_DENY
                           if (table, column) == ("users", "ssn") else sqlite3.SQLITE_OK)
        self.ask(con, "How many users now?")
        system, everything = self.last_prompt()
        self.assertNotIn("ssn", system)
        self.assert_no_ssn(everything)

    def test_an_asynchronous_run_goes_on_under_the_rules_as_they_are_when_it_resumes(self):
        # The first reply fails here (no such table): its correction is sent
        # from ask_result, after the host denied a column that ask_start's
        # prompt showed, with its samples and a value hint on it.
        self.llm.load({"rules": [{"match": "", "replies": [sql_reply("SELECT count(*) AS n FROM user"),
                                                          sql_reply("SELECT name FROM users WHERE id = 2")]}]})
        con = self.connect()
        run_id = con.execute("SELECT ask_start('Who has the number 444-55-6666?')").fetchone()[0]
        self.llm.wait_for_requests(1)
        first = self.llm.log()[0]["body"]["messages"]
        self.assertIn("ssn", first[0]["content"])
        self.assertIn("111-22-3333", first[0]["content"])
        self.assertIn("users.ssn", first[1]["content"])
        con.set_authorizer(lambda action, table, column, db, trigger: sqlite3.SQLITE_DENY
                           if (table, column) == ("users", "ssn") else sqlite3.SQLITE_OK)
        # One ask_result sees the run through: the first reply fails here, its
        # correction and the answer's review go to the model while it waits.
        rows = con.execute("SELECT row FROM ask_result(?, 60000)", (run_id,)).fetchall()
        self.assertEqual([json.loads(r) for (r,) in rows], [{"name": "Bob Example"}])
        correction = self.llm.log()[1]["body"]["messages"]
        self.assertIn("no such table", correction[-1]["content"])
        # The whole conversation as sent now: the column, its samples and
        # its hint are gone (the question itself is the user's).
        self.assertNotIn("ssn", json.dumps(correction))
        self.assertNotIn("111-22-3333", json.dumps(correction))
        self.assertIn("CREATE TABLE users", correction[0]["content"])
        self.assertIn("'Bob Example'", correction[0]["content"])
        (review,) = [e for e in self.llm.log(reviews=True) if e not in self.llm.log()]
        self.assertNotIn("ssn", json.dumps(review["body"]))
        self.assertNotIn("111-22-3333", json.dumps(review["body"]))


class BoundedReadsTest(LLMTestCase):
    def setUp(self):
        super().setUp()
        self.llm.load({"rules": [{"match": "", "replies": [sql_reply("SELECT count(*) AS n FROM products")]}]})

    def make_views(self, *statements, journal_mode="delete"):
        con = sqlite3.connect(self.db)
        con.execute("PRAGMA journal_mode = %s" % journal_mode)
        for st in statements:
            con.execute(st)
        con.commit()
        con.close()

    def runs(self, con):
        return con.execute("SELECT status, stopped_reads FROM agent_runs ORDER BY id").fetchall()

    def test_a_view_that_never_ends_or_is_too_big_is_left_out_of_the_samples_and_said(self):
        self.make_views(ENDLESS.format(name="forever"),
                        "CREATE VIEW huge AS SELECT randomblob(900000000) AS b")
        con = connect(self.db, self.llm.env())
        self.addCleanup(con.close)
        for question in ("How many products are there?", "And how many products now?"):
            self.assertEqual(con.execute("SELECT row FROM ask(?)", (question,)).fetchall(), [('{"n":12}',)])
        system = self.llm.log()[-1]["body"]["messages"][0]["content"]
        self.assertIn("CREATE VIEW forever", system)
        self.assertIn("CREATE VIEW huge", system)
        self.assertIn("sample rows: id | name", system)  # tables are still sampled
        runs = self.runs(con)
        self.assertEqual([status for status, _ in runs], ["ok", "ok"])
        stopped = runs[0][1]
        self.assertIn("sample rows of main.forever: left out, not read within", stopped)
        self.assertIn("sample rows of main.huge: left out, a value is longer than 1048576 bytes", stopped)
        # Read once for the schema: the next ask does not read it again.
        self.assertEqual(runs[1][1], stopped)

    def test_on_the_hosts_connection_views_are_not_sampled(self):
        # Every file in WAL mode: QueryPilot reads on the host's connection,
        # where a read can be stopped between steps only.
        self.make_views(ENDLESS.format(name="forever"), "CREATE VIEW cheap AS SELECT name FROM products",
                        journal_mode="wal")
        con = connect(self.db, self.llm.env())
        self.addCleanup(con.close)
        self.assertEqual(con.execute("SELECT row FROM ask('How many products are there?')").fetchall(),
                         [('{"n":12}',)])
        system = self.llm.log()[-1]["body"]["messages"][0]["content"]
        self.assertIn("CREATE VIEW forever", system)
        self.assertIn("CREATE VIEW cheap", system)
        cheap = system[system.index("CREATE VIEW cheap"):]
        self.assertNotIn("sample rows", cheap[:cheap.index(");") + 6])
        self.assertIn("sample rows: id | name", system)
        self.assertEqual(self.runs(con), [("ok", None)])

    def test_the_hosts_interrupt_stops_the_sample_reads(self):
        # Eight endless views: their reads take the whole sample budget (1 s).
        self.make_views(*[ENDLESS.format(name="forever%d" % i) for i in range(8)])
        con = connect(self.db, self.llm.env(), check_same_thread=False)
        self.addCleanup(con.close)
        # Interrupted from 0.3 s on, and again every 0.1 s until the ask
        # returns: on a busy machine the first may come before the statement
        # has started, when an interrupt does nothing.
        done = threading.Event()

        def interrupt():
            if not done.wait(0.3):
                con.interrupt()
                while not done.wait(0.1):
                    con.interrupt()

        timer = threading.Thread(target=interrupt)
        timer.start()
        try:
            with self.assertRaises(sqlite3.OperationalError) as caught:
                con.execute("SELECT row FROM ask('How many products are there?')").fetchall()
        finally:
            done.set()
            timer.join()
        self.assertIn("interrupt", str(caught.exception))
        self.assertEqual(self.llm.log(), [])  # the model was never asked
        status, stopped = self.runs(con)[0]
        self.assertEqual(status, "interrupted")
        if TIMED:  # a sanitizer build may reach the reads after 0.3 s
            self.assertIn("interrupted while reading the sample rows of main.forever", stopped)

    def opened_by(self, pid):
        """How many descriptors of process `pid` have the database open."""
        fds = "/proc/%d/fd" % pid
        count = 0
        for fd in os.listdir(fds):
            try:
                count += os.readlink(os.path.join(fds, fd)) == os.path.realpath(self.db)
            except OSError:
                pass
        return count

    def test_ctrl_c_in_the_shell_stops_the_sample_reads(self):
        self.make_views(*[ENDLESS.format(name="forever%d" % i) for i in range(8)])
        shell = subprocess.Popen([SQLITE3, "-batch", self.db], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, env=self.llm.env())
        shell.stdin.write(".load %s\nSELECT row FROM ask('How many products are there?');\n" % EXTENSION)
        shell.stdin.flush()
        # The ask has begun once QueryPilot's read connection has the file
        # open beside the shell's; its sample reads then take about 1 s.
        deadline = time.time() + 30
        while self.opened_by(shell.pid) < 2 and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        shell.send_signal(signal.SIGINT)  # Ctrl-C: the shell calls sqlite3_interrupt
        out = shell.communicate(".mode list\nSELECT status FROM agent_runs;\n", timeout=60)[0]
        self.assertIn("interrupted", out)
        self.assertEqual(self.llm.log(), [])


class SampledForThePromptTest(LLMTestCase):
    """A schema far over schema_budget_tokens: sample rows are read for the
    tables the prompt shows, not for every table."""

    def test_a_cold_ask_on_many_tables_reads_the_samples_of_the_tables_shown_only(self):
        con = sqlite3.connect(self.db)
        # WAL: QueryPilot reads on the host's connection, whose statements
        # the trace below sees.
        con.execute("PRAGMA journal_mode = wal")
        for i in range(300):
            con.execute("CREATE TABLE ledger_%d(id INTEGER PRIMARY KEY, label TEXT, amount REAL, "
                        "booked TEXT)" % i)
            con.execute("INSERT INTO ledger_%d VALUES (1, 'entry %d', 1.5, '2024-01-01')" % (i, i))
        con.commit()
        con.close()
        self.llm.load({"rules": [{"match": "", "replies": [sql_reply("SELECT count(*) AS n FROM products")]}]})
        host = connect(self.db, self.llm.env())
        self.addCleanup(host.close)
        statements = []
        host.set_trace_callback(statements.append)
        for question in ("How many products are there?", "And how many products now?"):
            self.assertEqual(host.execute("SELECT row FROM ask(?)", (question,)).fetchall(), [('{"n":12}',)])
        host.set_trace_callback(None)
        system = self.llm.log()[0]["body"]["messages"][0]["content"]
        self.assertIn("more tables are not shown", system)  # pruned
        self.assertIn("sample rows: id | name", system)  # the products table's, read
        self.assertEqual(self.llm.log()[1]["body"]["messages"][0]["content"], system)
        shown = set(re.findall(r"CREATE (?:TABLE|VIEW) (\w+)", system))
        # The tables each sample read names (SELECT q."id", ... FROM "main"."t" AS q LIMIT 3).
        sampled = set()
        for sql in statements:
            if sql.lstrip().upper().startswith("EXPLAIN") or "LIMIT 3" not in sql:
                continue
            sampled |= set(re.findall(r'FROM "main"\."(\w+)" AS q', sql))
        self.assertIn("products", sampled)
        self.assertLessEqual(sampled, shown)
        self.assertLess(len(sampled), 30)  # of the 300 ledgers and the shop's tables


class SchemaChangedElsewhereTest(LLMTestCase):
    def ask_after_another_connection_adds_a_column(self, journal_mode):
        con = sqlite3.connect(self.db)
        con.execute("PRAGMA journal_mode = %s" % journal_mode)
        con.close()
        self.llm.load({"rules": [{"match": "", "replies": [sql_reply("SELECT count(*) AS n FROM products")]}]})
        host = connect(self.db, self.llm.env())
        self.addCleanup(host.close)
        host.execute("SELECT row FROM ask('How many products are there?')").fetchall()
        self.assertNotIn("colour", self.llm.log()[-1]["body"]["messages"][0]["content"])
        other = sqlite3.connect(self.db)
        other.execute("ALTER TABLE products ADD COLUMN colour TEXT")
        other.commit()
        other.close()
        for question in ("How many products now?", "And how many products then?"):
            host.execute("SELECT row FROM ask(?)", (question,)).fetchall()
            system = self.llm.log()[-1]["body"]["messages"][0]["content"]
            products = system[system.index("CREATE TABLE products"):]
            self.assertIn("colour", products[:products.index(");")], question)

    def test_rollback_journal(self):
        self.ask_after_another_connection_adds_a_column("delete")

    def test_wal(self):
        self.ask_after_another_connection_adds_a_column("wal")


if __name__ == "__main__":
    unittest.main()
