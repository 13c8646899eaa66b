"""The host's rules stay the host's: an authorizer an application set before
loading QueryPilot keeps deciding (what the model is shown, what its SQL may
read) and is still in place after every ask; the virtual tables of the user's
schema (FTS5, FTS4, R*Tree) are askable; and through a client with its own
SQLite build (better-sqlite3) the write routes stay closed."""
import json
import os
import shutil
import sqlite3
import subprocess
import unittest

from harness import EXTENSION, SOURCE_DIR, LLMTestCase, ShellError, file_digest, install_node_clients, sql_reply

SANITIZED = bool(os.environ.get("QP_SANITIZED"))


def deny_email(action, table, column, db, trigger):
    if action == sqlite3.SQLITE_READ and table == "customers" and column == "email":
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class HostAuthorizerTest(LLMTestCase):
    def connect(self):
        con = sqlite3.connect(self.db)
        con.enable_load_extension(True)
        con.load_extension(EXTENSION)
        con.enable_load_extension(False)
        for key, value in (("provider", "openai"), ("base_url", self.llm.base + "/v1"), ("model", "scripted-model")):
            con.execute("SELECT agent_config(?, ?)", (key, value))
        self.addCleanup(con.close)
        return con

    def test_a_denied_column_is_never_shown_read_or_freed(self):
        emails = [r[0] for r in sqlite3.connect(self.db).execute("SELECT email FROM customers")]
        self.assertTrue(emails)
        customers = len(emails)
        self.llm.load({"rules": [
            {"match": "emails", "replies": [sql_reply("SELECT email FROM customers"),
                                            sql_reply("SELECT email FROM customers")]},
            {"match": "How many customers", "replies": [sql_reply("SELECT count(*) AS n FROM customers")]},
        ]})
        con = self.connect()
        con.set_authorizer(deny_email)
        # What the host allows is answered as always.
        self.assertEqual([json.loads(r) for (r,) in con.execute("SELECT row FROM ask('How many customers are there?')")],
                         [{"n": customers}])
        with self.assertRaises(sqlite3.Error) as caught:
            con.execute("SELECT row FROM ask('list the emails')").fetchall()
        self.assertIn("refused", str(caught.exception))
        # The model was shown neither the column (the schema, the samples)
        # nor any of its values; only the host's refusal names it.
        log = self.llm.log()
        self.assertEqual(len(log), 3)
        for request in log:
            system = request["body"]["messages"][0]["content"]
            self.assertNotIn("email", system)
        prompts = json.dumps(log)
        for e in emails:
            self.assertNotIn(e, prompts)
        # The host's authorizer is still the one in place.
        with self.assertRaises(sqlite3.DatabaseError):
            con.execute("SELECT email FROM customers").fetchall()
        con.set_authorizer(None)
        self.assertEqual(con.execute("SELECT count(email) FROM customers").fetchone(), (customers,))


class ManyTablesTest(LLMTestCase):
    """On a schema too big for one prompt, only the tables a prompt shows are
    checked under the host's rules at every ask: whatever the authorizer
    refuses since the last ask, by being set anew or by answering otherwise,
    never reaches the next prompt, and what it allows again comes back."""

    def setUp(self):
        super().setUp()
        con = sqlite3.connect(self.db)
        for i in range(120):
            con.execute("CREATE TABLE filler_%03d (id INTEGER PRIMARY KEY, label TEXT, created TEXT, note TEXT)" % i)
        con.executescript("""
            CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount REAL, paid_on TEXT);
            INSERT INTO invoices VALUES (1, 120.5, '2025-03-01'), (2, 80.0, '2025-03-02');
            CREATE TABLE salaries (id INTEGER PRIMARY KEY, employee TEXT, salary REAL);
            INSERT INTO salaries VALUES (1, 'Ann Example', 91000);
        """)
        con.commit()
        con.close()

    def connect(self):
        con = sqlite3.connect(self.db)
        con.enable_load_extension(True)
        con.load_extension(EXTENSION)
        con.enable_load_extension(False)
        self.addCleanup(con.close)
        return con

    def prompt(self, con, question):
        (p,) = con.execute("SELECT ask_prompt(?)", (question,)).fetchone()
        return json.loads(p)[0]["content"]

    def test_a_table_refused_between_two_asks_is_not_in_the_next_prompt(self):
        refused = set()  # what the host refuses now: (table, column), column None for all

        def host_rules(action, table, column, db, trigger):
            if action == sqlite3.SQLITE_READ and ((table, None) in refused or (table, column) in refused):
                return sqlite3.SQLITE_DENY
            return sqlite3.SQLITE_OK

        con = self.connect()
        question = "What is the total amount of the invoices?"
        first = self.prompt(con, question)
        self.assertIn("CREATE TABLE invoices", first)
        self.assertIn("120.5", first)
        self.assertIn("tables are not shown", first)  # pruned: a schema too big for one prompt
        self.assertNotIn("salaries", first)
        # An authorizer set anew: every prepared statement expires, nothing else tells.
        refused.add(("invoices", None))
        con.set_authorizer(host_rules)
        second = self.prompt(con, question)
        self.assertNotIn("invoices", second)
        self.assertNotIn("120.5", second)
        # Allowed again by the same authorizer, which no call tells of.
        refused.clear()
        self.assertIn("CREATE TABLE invoices", self.prompt(con, question))
        # Refused by the same authorizer answering otherwise: a column, then the table.
        refused.add(("invoices", "amount"))
        third = self.prompt(con, question)
        self.assertIn("CREATE TABLE invoices", third)
        self.assertNotIn("amount", third)
        self.assertNotIn("120.5", third)
        refused.add(("invoices", None))
        self.assertNotIn("invoices", self.prompt(con, question))
        # Another question's table, refused while no prompt showed it.
        refused.add(("salaries", None))
        self.assertNotIn("salaries", self.prompt(con, "What is the highest salary of the salaries?"))
        # The host's rules removed: both are shown again.
        con.set_authorizer(None)
        self.assertIn("CREATE TABLE invoices", self.prompt(con, question))
        self.assertIn("CREATE TABLE salaries", self.prompt(con, "What is the highest salary of the salaries?"))

    def test_a_correction_never_names_a_table_refused_since_the_last_ask(self):
        # salaries is never in a prompt about invoices; refused after the first
        # ask by the same authorizer answering otherwise, the hint for a
        # misspelt table must not offer it.
        refused = set()
        self.llm.load({"rules": [{"match": "", "replies": [
            sql_reply("SELECT count(*) AS n FROM invoices"),
            sql_reply("SELECT sum(amount) AS total FROM salarie"),
            sql_reply("SELECT sum(amount) AS total FROM invoices")]}]})
        con = self.connect()
        for key, value in (("provider", "openai"), ("base_url", self.llm.base + "/v1"), ("model", "scripted-model")):
            con.execute("SELECT agent_config(?, ?)", (key, value))
        con.set_authorizer(lambda action, table, column, db, trigger: sqlite3.SQLITE_DENY
                           if action == sqlite3.SQLITE_READ and table in refused else sqlite3.SQLITE_OK)
        self.assertEqual(con.execute("SELECT row FROM ask('How many invoices are there?')").fetchall(),
                         [('{"n":2}',)])
        refused.add("salaries")
        rows = con.execute("SELECT row FROM ask('What is the total amount of the invoices?')").fetchall()
        self.assertEqual(rows, [('{"total":200.5}',)])
        log = self.llm.log()
        self.assertEqual(len(log), 3)
        correction = log[2]["body"]["messages"]
        self.assertIn("no such table", correction[-1]["content"])
        self.assertNotIn("salaries", json.dumps(correction))
        hint = con.execute("SELECT hint FROM agent_attempts WHERE run_id = (SELECT max(id) FROM agent_runs) "
                           "AND attempt = 1").fetchone()[0]
        self.assertNotIn("salaries", hint or "")


class VirtualTablesTest(LLMTestCase):
    def test_fts5_fts4_and_rtree_tables_are_askable(self):
        con = sqlite3.connect(self.db)
        con.executescript("""
            CREATE VIRTUAL TABLE docs USING fts5(title, body);
            INSERT INTO docs VALUES ('Returns policy', 'Items can be returned within thirty days');
            INSERT INTO docs VALUES ('Shipping', 'We ship to every country in the shop');
            CREATE VIRTUAL TABLE notes USING fts4(title, body);
            INSERT INTO notes VALUES ('Refunds', 'Refunds go back to the card');
            CREATE VIRTUAL TABLE zones USING rtree(id, min_x, max_x);
            INSERT INTO zones VALUES (1, 0, 10), (2, 20, 30);
        """)
        con.commit()
        con.close()
        before = file_digest(self.db)
        res = self.session([
            "SELECT * FROM ask('Which document talks about returned items?')",
            "SELECT * FROM ask('Which note mentions refunds?')",
            "SELECT * FROM ask('Which zone contains x = 5?')",
        ], {"rules": [
            {"match": "returned items", "replies": [sql_reply("SELECT title FROM docs WHERE docs MATCH 'returned'")]},
            {"match": "refunds", "replies": [sql_reply("SELECT title FROM notes WHERE notes MATCH 'refunds'")]},
            {"match": "zone", "replies": [sql_reply("SELECT id FROM zones WHERE min_x <= 5 AND max_x >= 5")]},
        ]})
        self.assertEqual(res, [[{"row": '{"title":"Returns policy"}'}], [{"row": '{"title":"Refunds"}'}],
                               [{"row": '{"id":1}'}]])
        self.assertEqual(file_digest(self.db), before)
        # Each is shown to the model as what it is: its module says MATCH works.
        system = self.llm.log()[0]["body"]["messages"][0]["content"]
        for create in ("CREATE VIRTUAL TABLE docs USING fts5(\n  title,\n  body\n);",
                       "CREATE VIRTUAL TABLE notes USING fts4(\n  title,\n  body\n);",
                       "CREATE VIRTUAL TABLE zones USING rtree(\n  id,\n  min_x,\n  max_x\n);"):
            self.assertIn(create, system)


@unittest.skipIf(SANITIZED, "Node.js clients run in the Release suite")
class OwnSqliteBuildTest(LLMTestCase):
    """better-sqlite3 brings its own SQLite: the same routes stay closed."""

    def test_write_routes_stay_closed_in_better_sqlite3(self):
        modules = install_node_clients()
        if not modules:
            self.skipTest("better-sqlite3 could not be installed from the npm registry")
        con = sqlite3.connect(self.db)
        con.executescript("CREATE VIRTUAL TABLE docs USING fts5(title); INSERT INTO docs VALUES ('Returns policy');")
        con.commit()
        con.close()
        before = file_digest(self.db)
        self.llm.load({"rules": [
            {"match": "optimize", "replies": [sql_reply(
                "SELECT count(*) AS n FROM pragma_optimize WHERE (SELECT count(*) FROM orders) >= 0")]},
            {"match": "forget", "replies": [sql_reply("SELECT agent_forget(1) AS n")]},
            {"match": "history", "replies": [sql_reply("SELECT question FROM agent_runs")]},
            {"match": "documents", "replies": [sql_reply("SELECT title FROM docs WHERE docs MATCH 'returns'")]},
        ]})
        env = self.llm.env()
        env["NODE_PATH"] = modules
        script = os.path.join(SOURCE_DIR, "tests", "clients", "node_client.js")
        statements = ["SELECT row FROM ask('optimize it')", "SELECT row FROM ask('forget it')",
                      "SELECT row FROM ask('show the history')", "SELECT row FROM ask('which documents are about returns?')",
                      "SELECT count(*) FROM agent_runs WHERE status = 'refused'"]
        p = subprocess.run([shutil.which("node"), script, "better-sqlite3", self.db, EXTENSION, json.dumps(statements)],
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        out = [json.loads(line) for line in p.stdout.splitlines()]
        for refused in out[:3]:
            self.assertIn("refused", refused.get("error", ""), refused)
        self.assertEqual(out[3]["rows"], [['{"title":"Returns policy"}']])
        self.assertEqual(out[4]["rows"], [[3]])
        self.assertEqual(file_digest(self.db), before)


if __name__ == "__main__":
    unittest.main()
