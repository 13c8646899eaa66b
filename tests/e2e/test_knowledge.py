"""What QueryPilot knows of the data, through the sqlite3 shell: every
database of the connection (attached ones, temp tables), the value index of a
database file (read in the background, caught up after writes, kept in an
index file of its own), and columns of a few codes shown with their codes."""
import json
import os
import sqlite3
import subprocess
import time
import unittest

from harness import EXTENSION, SQLITE3, LLMTestCase, ShellError, file_digest, sql_reply


def make_world_db(path):
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE city(id INTEGER PRIMARY KEY, name TEXT, country_code TEXT, population INTEGER);
        INSERT INTO city(name, country_code, population) VALUES
            ('Lyon', 'FRA', 516092), ('Paris', 'FRA', 2148000), ('Kyoto', 'JPN', 1464000);
        CREATE TABLE countrylanguage(country_code TEXT, language TEXT, is_official TEXT);
        INSERT INTO countrylanguage VALUES ('FRA', 'French', 'T'), ('FRA', 'Breton', 'F'),
            ('JPN', 'Japanese', 'T'), ('JPN', 'Ainu', 'F');
    """)
    con.commit()
    con.close()


class AttachedDatabasesTest(LLMTestCase):
    def setUp(self):
        super().setUp()
        self.world = os.path.join(self.tmp, "world.db")
        make_world_db(self.world)

    def prompts(self):
        return [e["body"]["messages"] for e in self.llm.log()]

    def test_an_attached_databases_tables_and_temp_tables_are_in_the_prompt_and_answered(self):
        script = {"rules": [
            {"match": "How many cities", "replies": [sql_reply("SELECT count(*) AS n FROM world.city")]},
            {"match": "official", "replies": [sql_reply(
                "SELECT language FROM world.countrylanguage WHERE is_official = 'T' ORDER BY language")]},
            {"match": "watch list", "replies": [sql_reply("SELECT count(*) AS n FROM watchlist")]},
            {"match": "per status", "replies": [sql_reply("SELECT status, count(*) AS n FROM orders GROUP BY status")]},
            {"match": "Lyon", "replies": [sql_reply("SELECT population FROM world.city WHERE name = 'Lyon'")]},
        ]}
        before = file_digest(self.world)
        res = self.session([
            "ATTACH '%s' AS world" % self.world,
            "CREATE TEMP TABLE watchlist(customer_id INTEGER, reason TEXT)",
            "INSERT INTO watchlist VALUES (1, 'late payments')",
            "CREATE VIRTUAL TABLE temp.by_status USING ask('How many orders per status?')",
            "SELECT * FROM ask('How many cities are in the world database?')",
            "SELECT * FROM ask('Which languages are official?')",
            "SELECT * FROM ask('How many customers are on the watch list?')",
            "SELECT * FROM ask('How many people live in Lyon?')",
            "DETACH world",
            "SELECT * FROM ask('How many cities are in the world database?')",
        ], script)
        for r in res[:9]:
            self.assertNotIsInstance(r, ShellError, r)
        self.assertEqual(json.loads(res[4][0]["row"]), {"n": 3})
        self.assertEqual([json.loads(r["row"]) for r in res[5]], [{"language": "French"}, {"language": "Japanese"}])
        self.assertEqual(json.loads(res[6][0]["row"]), {"n": 1})
        self.assertEqual(json.loads(res[7][0]["row"]), {"population": 516092})
        prompts = self.prompts()
        system = prompts[1][0]["content"]  # the first ask() after the answer table
        # The attached database's tables, qualified; the temp table; not the
        # answer table, which is QueryPilot's own.
        self.assertIn("CREATE TABLE world.city (", system)
        self.assertIn("CREATE TABLE watchlist (", system)
        self.assertIn("CREATE TABLE orders (", system)
        self.assertNotIn("by_status", system)
        # A column of a few one-letter codes is shown with them.
        self.assertIn("is_official TEXT -- holds 'F' or 'T'", system)
        # A value of the attached database is hinted with its database.
        self.assertIn("world.city.name = 'Lyon'", prompts[4][1]["content"])
        # After DETACH the table is gone from the prompt, and the model's
        # query that names it fails (no model can ATTACH it back).
        self.assertNotIn("world.city", prompts[-1][0]["content"])
        self.assertIsInstance(res[9], ShellError)
        self.assertEqual(file_digest(self.world), before)

    def test_the_models_sql_may_not_attach(self):
        script = {"rules": [{"match": "Attach", "replies": [
            sql_reply("ATTACH '%s' AS w2" % self.world), sql_reply("ATTACH '%s' AS w2" % self.world)]}]}
        res = self.session(["SELECT * FROM ask('Attach the world database')",
                            "SELECT count(*) AS n FROM pragma_database_list WHERE name = 'w2'"], script)
        self.assertIsInstance(res[0], ShellError)
        self.assertIn("ATTACH is not allowed", res[0])
        self.assertEqual(res[1], [{"n": 0}])


class ValueIndexShellTest(LLMTestCase):
    SCRIPT = {"rules": [{"match": "", "replies": [sql_reply("SELECT 1 AS one")]}]}

    def progress(self, res):
        return json.loads(res[0]["agent_config('value_index')"]) if isinstance(res, list) and res else None

    def test_progress_in_sql_and_an_index_file_reused_by_the_next_process(self):
        index = os.path.join(self.tmp, "values.qpindex")
        # In WAL mode a file is read in the background (a reader there never
        # blocks the application's writes).
        con = sqlite3.connect(self.db)
        con.execute("PRAGMA journal_mode = WAL")
        con.close()
        # The ask waits for the index to be complete (as long as it takes, on
        # a busy machine: the wait ends when it is).
        first = self.session([
            "SELECT agent_config('value_index_file', '%s')" % index,
            "SELECT agent_config('value_index_wait_ms', 60000)",
            "SELECT * FROM ask('How many orders were refunded?')",
            "SELECT agent_config('value_index')",
        ], self.SCRIPT)
        for r in first:
            self.assertNotIsInstance(r, ShellError, r)
        p = json.loads(first[3][0]["agent_config('value_index')"])
        main = [d for d in p if d["database"] == "main"][0]
        self.assertEqual(main["read"], "background")
        self.assertEqual(main["index_file"], index)
        self.assertEqual(main["state"], "complete")
        self.assertEqual(main["tables_done"], main["tables"])
        self.assertGreater(main["values"], 0)
        self.assertTrue(os.path.exists(index))
        # The next process finds the index complete at once: nothing to read.
        con = sqlite3.connect(index)
        done = con.execute("SELECT count(*), sum(done) FROM qp_tables").fetchone()
        con.close()
        self.assertEqual(done[0], done[1])
        second = self.session([
            "SELECT agent_config('value_index_file', '%s')" % index,
            "SELECT agent_config('value_index_wait_ms', 0)",
            "SELECT * FROM ask('Which customers live in Lyon?')",
            "SELECT agent_config('value_index')",
        ], self.SCRIPT)
        p2 = [d for d in json.loads(second[3][0]["agent_config('value_index')"]) if d["database"] == "main"][0]
        self.assertEqual(p2["values"], main["values"])

    def test_a_rollback_journal_file_is_read_by_the_asks_and_writes_never_meet_a_lock(self):
        res = self.session([
            "SELECT * FROM ask('How many orders were refunded?')",
            "SELECT agent_config('value_index')",
            "BEGIN IMMEDIATE",
            "INSERT INTO customers(name, email, city, country, signed_up) "
            "VALUES ('Ada Quint', 'ada@example.com', 'Lyon', 'France', '2024-05-01')",
            "COMMIT",
        ], self.SCRIPT)
        for r in res:
            self.assertNotIsInstance(r, ShellError, r)
        main = [d for d in json.loads(res[1][0]["agent_config('value_index')"]) if d["database"] == "main"][0]
        self.assertEqual(main["read"], "during asks")
        self.assertEqual(main["state"], "complete")  # a small file: read whole by the first ask

    def test_an_index_file_is_never_the_database(self):
        digest = file_digest(self.db)
        res = self.session(["SELECT agent_config('value_index_file', '%s')" % self.db,
                            "SELECT agent_config('value_index', 'x')"], self.SCRIPT)
        self.assertIsInstance(res[0], ShellError)
        self.assertIn("a file of its own", res[0])
        self.assertIsInstance(res[1], ShellError)
        self.assertEqual(file_digest(self.db), digest)

    def test_rows_inserted_on_the_connection_are_hinted_at_the_next_ask(self):
        res = self.session([
            "SELECT agent_config('value_index_wait_ms', 60000)",  # complete, however busy the machine
            "SELECT * FROM ask('How many customers are there?')",
            "INSERT INTO customers(name, email, city, country, signed_up) "
            "VALUES ('Grace Thompson', 'grace@example.com', 'Zanzibar City', 'Tanzania', '2024-05-01')",
            "SELECT * FROM ask('What did Grace Thompson order?')",
        ], self.SCRIPT)
        for r in res:
            self.assertNotIsInstance(r, ShellError, r)
        question = self.llm.log()[-1]["body"]["messages"][1]["content"]
        self.assertIn("customers.name = 'Grace Thompson'", question)


class AgentIndexTest(LLMTestCase):
    """agent_index(): a big file in rollback-journal mode read whole at once,
    like ANALYZE; asks past their reading budget read only what changed."""
    SCRIPT = {"rules": [{"match": "", "replies": [sql_reply("SELECT 1 AS one")]}]}

    def make_people_db(self, rows):
        path = os.path.join(self.tmp, "people.db")
        con = sqlite3.connect(path)
        con.executescript("""
            CREATE TABLE people(id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT);
            CREATE TABLE pets(id INTEGER PRIMARY KEY, owner INTEGER REFERENCES people(id), name TEXT);
        """)
        con.execute("""
            WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?1)
            INSERT INTO people SELECT i, 'Person' || printf('%06d', i) || ' Zed', 'Town' || (i % 300) FROM k
        """, (rows,))
        con.execute("""
            WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?1)
            INSERT INTO pets SELECT i, i, 'Pet' || printf('%06d', i) FROM k
        """, (rows,))
        # The last row of the biggest table: read only when the whole table is.
        con.execute("INSERT INTO people(name, city) VALUES ('Quintessa Marlowe', 'Town7')")
        con.commit()
        con.close()
        self.assertEqual(os.path.getsize(path) > (1 << 20), True)
        return path

    def prompt(self):
        return self.llm.log()[-1]["body"]["messages"][1]["content"]

    def test_an_explicit_build_reads_a_big_rollback_file_whole_and_asks_then_catch_up_only(self):
        self.db = self.make_people_db(60000)
        digest = file_digest(self.db)
        res = self.session([
            "SELECT agent_config('value_index_ask_ms', 0)",  # asks never read the file
            "SELECT * FROM ask('What does Quintessa Marlowe own?')",
            "SELECT agent_config('value_index')",
            "SELECT agent_index()",
            "SELECT * FROM ask('Which pets does Quintessa Marlowe have?')",
            "SELECT agent_config('value_index')",
        ], self.SCRIPT)
        for r in res:
            self.assertNotIsInstance(r, ShellError, r)
        log = self.llm.log()
        before = log[0]["body"]["messages"][1]["content"]
        after = log[1]["body"]["messages"][1]["content"]
        self.assertNotIn("Quintessa Marlowe'", before)
        partial = [d for d in json.loads(res[2][0]["agent_config('value_index')"]) if d["database"] == "main"][0]
        self.assertEqual(partial["read"], "during asks")
        self.assertEqual(partial["state"], "partial")
        self.assertIn("agent_index()", partial["advice"])
        self.assertEqual(partial["values"], 0)
        built = [d for d in json.loads(res[3][0]["agent_index()"]) if d["database"] == "main"][0]
        self.assertEqual(built["state"], "complete")
        self.assertEqual(built["tables"], 2)
        self.assertEqual(built["tables_done"], 2)
        # 60,001 names, 300 towns, 60,000 pet names.
        self.assertEqual(built["values"], 60001 + 300 + 60000)
        self.assertIn("people.name = 'Quintessa Marlowe'", after)
        now = [d for d in json.loads(res[5][0]["agent_config('value_index')"]) if d["database"] == "main"][0]
        self.assertEqual(now["state"], "complete")
        # Reading never wrote the database.
        self.assertEqual(file_digest(self.db), digest)

    def test_a_row_written_after_the_build_is_hinted_and_a_database_name_is_checked(self):
        self.db = self.make_people_db(40000)
        res = self.session([
            "SELECT agent_config('value_index_ask_ms', 0)",
            "SELECT agent_index('main')",
            "INSERT INTO people(name, city) VALUES ('Barnaby Quillfeather', 'Town1')",
            "SELECT * FROM ask('Where does Barnaby Quillfeather live?')",
            "SELECT agent_index('nowhere')",
            "SELECT agent_index(7)",
        ], self.SCRIPT)
        for r in res[:4]:
            self.assertNotIsInstance(r, ShellError, r)
        self.assertIn("people.name = 'Barnaby Quillfeather'", self.prompt())
        self.assertIsInstance(res[4], ShellError)
        self.assertIn("no database named 'nowhere'", res[4])
        self.assertIsInstance(res[5], ShellError)
        self.assertIn("database name", res[5])

    def test_a_file_unchanged_since_its_last_check_is_known_by_its_stamp_and_no_commit_is_missed(self):
        from harness import connect
        self.db = self.make_people_db(40000)
        self.llm.load(self.SCRIPT)

        def settle():
            # A file written in the last 3 s gets no stamp: a write within
            # the same tick of the file system's clock would not move its times.
            st = os.stat(self.db)
            time.sleep(max(0.0, 3.3 - (time.time() - max(st.st_mtime, st.st_ctime))))

        def ask(question, hinted=None):
            # A connection of its own, as a new process or client would open;
            # how its first ask found the index. With `hinted`, asked again
            # until the prompt holds it: an ask reads for 60 ms at most, and
            # on a busy machine the row may fall to the next ask.
            con = connect(self.db, self.llm.env())
            try:
                con.execute("SELECT * FROM ask(?)", (question,)).fetchall()
                state = [d for d in json.loads(con.execute("SELECT agent_config('value_index')").fetchone()[0])
                         if d["database"] == "main"][0]
                for _ in range(40):
                    if hinted is None or hinted in self.prompt():
                        break
                    con.execute("SELECT * FROM ask(?)", (question,)).fetchall()
            finally:
                con.close()
            return state, self.prompt()

        def commit(sql):
            con = sqlite3.connect(self.db)
            con.execute(sql)
            con.commit()
            con.close()

        con = connect(self.db, self.llm.env())
        built = json.loads(con.execute("SELECT agent_index()").fetchone()[0])[0]
        con.close()
        self.assertEqual(built["state"], "complete")
        settle()
        first, _ = ask("Where does Quintessa Marlowe live?")
        self.assertEqual(first["checked"], "tables")
        again, prompt = ask("Where does Quintessa Marlowe live?")
        self.assertEqual(again["checked"], "stamp")
        self.assertIn("people.name = 'Quintessa Marlowe'", prompt)
        # A row committed by another connection: within its first 3 s the
        # file gets no stamp, and the next connection checks each table.
        commit("INSERT INTO people(name, city) VALUES ('Barnaby Quillfeather', 'Town1')")
        soon, prompt = ask("Where does Barnaby Quillfeather live?", "people.name = 'Barnaby Quillfeather'")
        self.assertEqual(soon["checked"], "tables")
        self.assertIn("people.name = 'Barnaby Quillfeather'", prompt)
        settle()
        stamped, _ = ask("Where does Barnaby Quillfeather live?")
        self.assertEqual(stamped["checked"], "tables")  # stamped now
        # A row changed in place: the file's size and pages stay, its times
        # do not; the stamp kept is not the file's now.
        commit("UPDATE people SET city = 'Town2' WHERE name = 'Barnaby Quillfeather'")
        settle()
        later, _ = ask("Where does Barnaby Quillfeather live?")
        self.assertEqual(later["checked"], "tables")
        last, prompt = ask("Where does Barnaby Quillfeather live?")
        self.assertEqual(last["checked"], "stamp")
        self.assertIn("people.name = 'Barnaby Quillfeather'", prompt)

    def test_an_interrupted_build_keeps_what_it_read_and_the_next_goes_on(self):
        import threading
        from harness import connect
        self.db = self.make_people_db(400000)
        self.llm.load(self.SCRIPT)
        con = connect(self.db, self.llm.env(), check_same_thread=False)
        self.addCleanup(con.close)
        # Interrupts every 20 ms until the call returns: one sent before the
        # statement began (a busy machine) would have no effect.
        returned = threading.Event()

        def interrupt():
            while not returned.wait(0.02):
                con.interrupt()

        interrupter = threading.Thread(target=interrupt)
        interrupter.start()
        try:
            with self.assertRaises(sqlite3.OperationalError) as caught:
                con.execute("SELECT agent_index()").fetchone()
        finally:
            returned.set()
            interrupter.join()
        self.assertIn("interrupted", str(caught.exception))
        self.assertIn("agent_index() again goes on from there", str(caught.exception))
        partial = [d for d in json.loads(con.execute("SELECT agent_config('value_index')").fetchone()[0])
                   if d["database"] == "main"][0]
        self.assertLess(partial["values"], 400001 + 300 + 400000)
        built = [d for d in json.loads(con.execute("SELECT agent_index()").fetchone()[0])
                 if d["database"] == "main"][0]
        self.assertEqual(built["state"], "complete")
        # Nothing read twice, nothing lost: every distinct value once.
        self.assertEqual(built["values"], 400001 + 300 + 400000)


class DescriptionsTest(LLMTestCase):
    SCRIPT = {"rules": [{"match": "", "replies": [sql_reply("SELECT count(*) AS n FROM orders WHERE status = 'paid'")]}]}

    def test_descriptions_go_into_the_prompt_and_persist_with_the_history_file(self):
        history = os.path.join(self.tmp, "history.qp")
        digest = file_digest(self.db)
        res = self.session([
            "SELECT agent_config('history_file', '%s')" % history,
            "SELECT agent_describe('orders.status', 'where the order is: paid, shipped or refunded')",
            "SELECT agent_describe('customers', 'people who signed up, one row each')",
            "SELECT agent_describe('orders.colour', 'x')",
            "SELECT agent_describe('nothing', 'x')",
            "SELECT agent_describe('orders.status', '')",
            "SELECT * FROM ask('How many orders are paid?')",
            "SELECT target, table_name, column_name, description FROM agent_descriptions ORDER BY target",
        ], self.SCRIPT)
        self.assertEqual(res[1], [{"agent_describe('orders.status', 'where the order is: paid, shipped or refunded')":
                                   "where the order is: paid, shipped or refunded"}])
        self.assertEqual(res[3], "agent_describe(): no such column: orders.colour")
        self.assertEqual(res[4], "agent_describe(): no such table: nothing")
        self.assertIn("the description is empty", res[5])
        self.assertNotIsInstance(res[6], ShellError, res[6])
        system = self.llm.log()[0]["body"]["messages"][0]["content"]
        self.assertIn("-- people who signed up, one row each\nCREATE TABLE customers (", system)
        self.assertIn("status TEXT NOT NULL, -- where the order is: paid, shipped or refunded", system)
        self.assertEqual(res[7], [
            {"target": "customers", "table_name": "customers", "column_name": None,
             "description": "people who signed up, one row each"},
            {"target": "orders.status", "table_name": "orders", "column_name": "status",
             "description": "where the order is: paid, shipped or refunded"}])
        # The next process with the same history file has them; a removal
        # is kept too. The database itself was never written.
        again = self.session([
            "SELECT agent_config('history_file', '%s')" % history,
            "SELECT agent_describe('customers', NULL)",
            "SELECT target FROM agent_descriptions",
        ], self.SCRIPT)
        self.assertEqual(again[2], [{"target": "orders.status"}])
        third = self.session(["SELECT agent_config('history_file', '%s')" % history,
                              "SELECT target FROM agent_descriptions"], self.SCRIPT)
        self.assertEqual(third[1], [{"target": "orders.status"}])
        self.assertEqual(file_digest(self.db), digest)



class QueryPilotNamesTest(LLMTestCase):
    """A user's tables named like QueryPilot's own."""

    def test_a_table_named_ask_is_shown_qualified_and_agent_runs_is_the_users(self):
        script = {"rules": [
            {"match": "notes", "replies": [sql_reply("SELECT count(*) AS n FROM agent_runs")]},
            {"match": "questions", "replies": [sql_reply("SELECT count(*) AS n FROM main.ask")]},
            {"match": "bare", "replies": [sql_reply("SELECT count(*) AS n FROM ask")]},
        ]}
        res = self.session([
            "CREATE TABLE main.ask(id INTEGER PRIMARY KEY, question TEXT)",
            "INSERT INTO main.ask VALUES (1, 'a'), (2, 'b')",
            "CREATE TABLE agent_runs(id INTEGER PRIMARY KEY, note TEXT)",
            "INSERT INTO agent_runs VALUES (1, 'x'), (2, 'y'), (3, 'z')",
            "SELECT * FROM ask('How many notes are there?')",
            "SELECT * FROM ask('How many questions are stored?')",
            "SELECT * FROM ask('How many, bare?')",
            "SELECT count(*) AS n FROM main.ask",
        ], script, QUERYPILOT_MAX_ATTEMPTS="1")
        for r in res[:5]:
            self.assertNotIsInstance(r, ShellError, r)
        # The user's agent_runs is the user's data, read by its name.
        self.assertEqual([json.loads(r["row"]) for r in res[4]], [{"n": 3}])
        system = self.llm.log()[0]["body"]["messages"][0]["content"]
        self.assertIn("CREATE TABLE agent_runs", system)
        # main.ask is shown qualified, and the prompt says why: read by its
        # database's name it is the user's table; a bare ask is QueryPilot's,
        # refused.
        self.assertIn("CREATE TABLE main.ask", system)
        self.assertIn("Write main.ask with its database name", system)
        self.assertEqual([json.loads(r["row"]) for r in res[5]], [{"n": 2}])
        self.assertIsInstance(res[6], ShellError)
        self.assertIn("refused", res[6])
        self.assertEqual(res[7], [{"n": 2}])  # the user's rows are untouched


if __name__ == "__main__":
    unittest.main()
