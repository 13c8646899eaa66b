"""What QueryPilot leaves of the files beside the host's: a database in WAL
mode ends as plain SQLite leaves it (no -wal or -shm file once its last
connection closes, every committed row in the .db file alone), nothing of
QueryPilot's holds the user's file once the host has closed it, and a value
index file that cannot be used says so, naming it, never "complete"."""
import json
import os
import shutil
import sqlite3
import subprocess
import time

from harness import SQLITE3, LLMTestCase, ShellError, connect, file_digest, session, sql_reply

COUNT_SQL = "SELECT count(*) AS n FROM orders"
SCRIPT = {"rules": [{"match": "", "replies": [sql_reply(COUNT_SQL)]}]}
NEW_ROWS = [("Quilla Newrow %d" % i, "quilla%d@example.com" % i) for i in range(50)]


def companions(path):
    return [s for s in ("-wal", "-shm") if os.path.exists(path + s)]


def value_index(con):
    return [p for p in json.loads(con.execute("SELECT agent_config('value_index')").fetchone()[0])
            if p["database"] == "main"][0]


class WalFilesTest(LLMTestCase):
    """A WAL database asked about once, written to, then closed."""

    def setUp(self):
        super().setUp()
        con = sqlite3.connect(self.db)
        self.assertEqual(con.execute("PRAGMA journal_mode = WAL").fetchone()[0], "wal")
        con.close()
        self.assertEqual(companions(self.db), [])
        self.llm.load(SCRIPT)

    def open_and_ask(self, **settings):
        """A connection with QueryPilot loaded that has asked once, its value
        index read in the background (the reader this is about)."""
        con = connect(self.db, self.llm.env())
        con.execute("SELECT agent_config('value_index_wait_ms', 5000)")
        for k, v in settings.items():
            con.execute("SELECT agent_config(?, ?)", (k, v))
        self.assertEqual(con.execute("SELECT row FROM ask('How many orders are there?')").fetchall(),
                         [('{"n":100}',)])
        # The background reader is at work on the file (a small file is read
        # by the ask itself; the reader's first pass may still be running).
        deadline = time.monotonic() + 60
        while value_index(con)["state"] != "complete" and time.monotonic() < deadline:
            time.sleep(0.02)
        p = value_index(con)
        self.assertEqual((p["read"], p["state"]), ("background", "complete"), p)
        return con

    def insert(self, con):
        con.executemany("INSERT INTO customers(name, email, city, country, signed_up) "
                        "VALUES (?, ?, 'Lyon', 'France', '2024-05-01')", NEW_ROWS)
        con.commit()

    def assert_copy_holds_the_rows(self):
        """The .db file alone, copied elsewhere, holds every committed row."""
        copy = os.path.join(self.tmp, "copy", "shop.db")
        os.makedirs(os.path.dirname(copy))
        shutil.copyfile(self.db, copy)
        con = sqlite3.connect(copy)
        try:
            self.assertEqual(con.execute("SELECT count(*) FROM customers WHERE name LIKE 'Quilla Newrow %'")
                             .fetchone()[0], len(NEW_ROWS))
            self.assertEqual(con.execute("PRAGMA integrity_check").fetchone()[0], "ok")
        finally:
            con.close()

    def assert_unlocked(self):
        """Another process takes the file for itself at once (leaving WAL mode
        needs it alone): no connection of QueryPilot's is left on it."""
        p = subprocess.run([SQLITE3, self.db], input=".timeout 0\nPRAGMA journal_mode = DELETE;\n",
                           capture_output=True, text=True, timeout=60)
        self.assertEqual((p.stdout.strip(), p.stderr.strip()), ("delete", ""))

    def test_the_last_close_removes_the_wal_and_shm_files(self):
        con = self.open_and_ask()
        self.assertEqual(companions(self.db), ["-wal", "-shm"])  # open, as with any connection
        self.insert(con)
        con.close()
        self.assertEqual(companions(self.db), [])
        self.assert_copy_holds_the_rows()
        self.assert_unlocked()

    def test_an_index_file_is_closed_with_the_host_too(self):
        index = os.path.join(self.tmp, "values.qpindex")
        con = self.open_and_ask(value_index_file=index)
        self.insert(con)
        con.close()
        self.assertEqual(companions(self.db), [])
        self.assertEqual(companions(index), [])
        self.assert_copy_holds_the_rows()
        # The index file alone holds what was read.
        idx = sqlite3.connect(index)
        self.assertGreater(idx.execute("SELECT count(*) FROM qp_values").fetchone()[0], 0)
        idx.close()

    def test_another_connection_still_open_keeps_them_until_it_closes(self):
        con = self.open_and_ask()
        other = sqlite3.connect(self.db)  # plain SQLite, in the same process
        self.assertEqual(other.execute("SELECT count(*) FROM orders").fetchone()[0], 100)
        self.insert(con)
        con.close()
        # As plain SQLite: the files stay while a connection has the database open.
        self.assertEqual(companions(self.db), ["-wal", "-shm"])
        other.close()
        self.assertEqual(companions(self.db), [])
        self.assert_copy_holds_the_rows()

    def test_two_connections_asking_share_the_reader_and_the_last_close_removes_them(self):
        first = self.open_and_ask()
        second = self.open_and_ask()
        self.insert(first)
        first.close()
        self.assertEqual(companions(self.db), ["-wal", "-shm"])  # the second is open
        # The second's ask still hints at the rows the first inserted.
        second.execute("SELECT row FROM ask('What did Quilla Newrow 7 order?')").fetchall()
        self.assertIn("'Quilla Newrow 7'", self.llm.log()[-1]["body"]["messages"][1]["content"])
        second.close()
        self.assertEqual(companions(self.db), [])
        self.assert_copy_holds_the_rows()
        self.assert_unlocked()

    def test_a_wal_file_attached_beside_a_rollback_main_closes_as_sqlite_leaves_it(self):
        # main in rollback-journal mode: what an ask reads before the model
        # call goes to QueryPilot's read connection, which attaches the WAL file.
        main = os.path.join(self.tmp, "main.db")
        con = sqlite3.connect(main)
        con.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)")
        con.execute("INSERT INTO notes(body) VALUES ('first')")
        con.commit()
        con.close()
        con = connect(main, self.llm.env())
        con.execute("ATTACH ? AS shop", (self.db,))
        self.assertEqual(con.execute("SELECT row FROM ask('How many orders are there?')").fetchall(),
                         [('{"n":100}',)])
        con.executemany("INSERT INTO shop.customers(name, email, city, country, signed_up) "
                        "VALUES (?, ?, 'Lyon', 'France', '2024-05-01')", NEW_ROWS)
        con.commit()
        con.close()
        self.assertEqual(companions(self.db), [])
        self.assertFalse(os.path.exists(main + "-journal"))
        self.assert_copy_holds_the_rows()
        self.assert_unlocked()


class RollbackFilesTest(LLMTestCase):
    def test_nothing_holds_the_file_after_an_ask_nor_after_the_close(self):
        self.llm.load(SCRIPT)
        con = connect(self.db, self.llm.env())
        self.assertEqual(con.execute("SELECT row FROM ask('How many orders are there?')").fetchall(),
                         [('{"n":100}',)])

        def exclusive():
            p = subprocess.run([SQLITE3, self.db], input=".timeout 0\nBEGIN EXCLUSIVE;\nCOMMIT;\nSELECT 'ok';\n",
                               capture_output=True, text=True, timeout=60)
            return p.stdout.strip(), p.stderr.strip()

        self.assertEqual(exclusive(), ("ok", ""))  # the host open, between asks
        con.close()
        self.assertEqual(exclusive(), ("ok", ""))
        self.assertEqual(os.listdir(self.tmp), ["shop.db"])


class KeptIndexTest(LLMTestCase):
    """The kept value index (value_index_cache, in $XDG_CACHE_HOME/querypilot/
    values): never written through a link out of its folder, nothing pruned
    in a folder QueryPilot did not make, and one that cannot be used made
    anew, saying so. The user's files stay byte-for-byte the same."""

    def setUp(self):
        super().setUp()
        self.llm.load(SCRIPT)
        self.cache_home = os.path.join(self.tmp, "cache")
        self.folder = os.path.join(self.cache_home, "querypilot", "values")
        # More than 1 MiB, so that its index is kept.
        con = sqlite3.connect(self.db)
        con.executemany("INSERT INTO customers(name, email, city, country, signed_up) "
                        "VALUES (?, ?, 'Lyon', 'France', '2024-05-01')",
                        [("Customer %05d Vale" % i, "customer%05d@example.com" % i) for i in range(30000)])
        con.commit()
        con.close()
        self.assertGreater(os.path.getsize(self.db), 1 << 20)

    def ask(self):
        """An ask, agent_index() and the index's state, in a new process."""
        res = session(self.db, [
            "SELECT * FROM ask('How many orders are there?')",
            "SELECT agent_index() AS b",
            "SELECT agent_config('value_index') AS p",
        ], self.llm.env(XDG_CACHE_HOME=self.cache_home))
        self.assertEqual(res[0], [{"row": '{"n":100}'}])
        self.assertNotIsInstance(res[1], ShellError, res[1])
        built = [b for b in json.loads(res[1][0]["b"]) if b["database"] == "main"][0]
        state = [p for p in json.loads(res[2][0]["p"]) if p["database"] == "main"][0]
        return built, state

    def kept_file(self):
        built, state = self.ask()
        self.assertTrue(built["index_file"].startswith(os.path.realpath(self.folder) + "/"), built)
        return built["index_file"]

    def test_a_link_at_the_kept_index_is_never_written_through(self):
        kept = self.kept_file()
        empty, diary = os.path.join(self.tmp, "empty.txt"), os.path.join(self.tmp, "diary.txt")
        open(empty, "w").close()
        with open(diary, "w") as f:
            f.write("dear diary")
        for side in ("", "-journal", "-wal", "-shm"):
            if os.path.lexists(kept + side):
                os.remove(kept + side)
        os.symlink(empty, kept)
        os.symlink(diary, kept + "-wal")
        before = [file_digest(p) for p in (self.db, empty, diary)]
        built, state = self.ask()
        self.assertEqual([file_digest(p) for p in (self.db, empty, diary)], before)
        self.assertEqual(os.path.getsize(empty), 0)
        self.assertFalse(os.path.islink(kept))
        with open(kept, "rb") as f:
            self.assertEqual(f.read(16), b"SQLite format 3\0")
        self.assertEqual((built["index_file"], built["state"]), (kept, "complete"))
        self.assertIn("was a symbolic link", built["kept_index"])
        self.assertEqual(state["kept_index"], built["kept_index"])

    def test_nothing_is_pruned_in_a_folder_that_is_a_link(self):
        # The user's folder, with a month-old file named like a kept index.
        user = os.path.join(self.tmp, "mine")
        os.makedirs(user, mode=0o700)
        theirs = os.path.join(user, "report.db-0123456789abcdef.qpindex")
        with open(theirs, "w") as f:
            f.write("mine")
        old = time.time() - 40 * 86400
        os.utime(theirs, (old, old))
        os.makedirs(os.path.dirname(self.folder))
        os.symlink(user, self.folder)
        before = file_digest(self.db)
        built, state = self.ask()
        self.assertEqual(os.listdir(user), [os.path.basename(theirs)])
        with open(theirs) as f:
            self.assertEqual(f.read(), "mine")
        self.assertEqual(file_digest(self.db), before)
        # A temporary index serves, and the state says why.
        self.assertEqual((built["index_file"], built["state"]), ("", "complete"))
        self.assertTrue(state["kept_index"].startswith("not used: "), state)
        self.assertIn("is a symbolic link", state["kept_index"])

    def test_a_corrupt_kept_index_is_made_anew_and_said_so(self):
        kept = self.kept_file()
        with open(kept, "wb") as f:
            f.write(b"not an index\n" * 1000)
        before = file_digest(self.db)
        built, state = self.ask()
        self.assertEqual(file_digest(self.db), before)
        self.assertEqual((built["index_file"], built["state"]), (kept, "complete"))
        self.assertIn("so it was made anew", built["kept_index"])
        self.assertIn("file is not a database", built["kept_index"])
        self.assertEqual(state["kept_index"], built["kept_index"])
        with open(kept, "rb") as f:
            self.assertEqual(f.read(16), b"SQLite format 3\0")
        con = sqlite3.connect("file:%s?mode=ro" % kept, uri=True)
        self.assertEqual(con.execute("PRAGMA quick_check").fetchone()[0], "ok")
        # 30,000 names and e-mails of their own: held as hashes (qp_buckets), the rest by value.
        self.assertGreater(con.execute("SELECT sum(value_count) FROM qp_columns").fetchone()[0], 60000)
        self.assertGreater(con.execute("SELECT count(*) FROM qp_buckets").fetchone()[0], 0)
        con.close()


class CorruptIndexFileTest(LLMTestCase):
    """A value_index_file that cannot be used is an error naming it: at
    agent_config() when it is set, in agent_config('value_index') and from
    agent_index(); asks still answer, without hints from it."""

    def setUp(self):
        super().setUp()
        self.index = os.path.join(self.tmp, "values.qpindex")
        self.llm.load(SCRIPT)

    def build_index(self, wal, more_names=0):
        con = sqlite3.connect(self.db)
        if wal:
            con.execute("PRAGMA journal_mode = WAL")
        con.executemany("INSERT INTO customers(name, email, city, country, signed_up) "
                        "VALUES (?, ?, 'Lyon', 'France', '2024-05-01')",
                        [("Customer %05d Vale" % i, "c%d@example.com" % i) for i in range(more_names)])
        con.commit()
        con.close()
        res = session(self.db, ["SELECT agent_config('value_index_file', '%s')" % self.index,
                                "SELECT agent_index() AS b"], self.llm.env())
        self.assertNotIsInstance(res[1], ShellError, res[1])
        self.assertEqual(json.loads(res[1][0]["b"])[0]["state"], "complete", res[1][0]["b"])
        self.assertEqual(companions(self.index), [])  # closed with the shell: all in the file

    def garble(self, page):
        with open(self.index, "r+b") as f:
            f.seek((page - 1) * 4096)
            f.write(bytes((i * 37 + 11) % 251 for i in range(4096)))

    def pages_of_values(self):
        """The leaf pages of qp_values, and its root."""
        con = sqlite3.connect(self.index)
        self.assertEqual(con.execute("PRAGMA page_size").fetchone()[0], 4096)
        leaves = [r[0] for r in con.execute(
            "SELECT pageno FROM dbstat WHERE name = 'qp_values' AND pagetype = 'leaf' ORDER BY pageno")]
        root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'qp_values'").fetchone()[0]
        con.close()
        return leaves, root

    def ask_and_read(self):
        return session(self.db, [
            "SELECT agent_config('value_index_file', '%s')" % self.index,
            "SELECT * FROM ask('How many orders are there?')",
            "SELECT agent_index() AS b",
            "SELECT agent_config('value_index') AS p",
        ], self.llm.env())

    def check_corrupt_values(self, wal):
        # Values on many pages: one of them garbled, where the index file's
        # first rows and its tables of progress read fine.
        self.build_index(wal, more_names=3000)
        leaves, root = self.pages_of_values()
        self.assertGreater(len(leaves), 3)
        self.garble(leaves[-1])
        digest = file_digest(self.db)
        res = self.ask_and_read()
        self.assertNotIsInstance(res[0], ShellError, res[0])
        self.assertEqual(res[1], [{"row": '{"n":100}'}])  # the ask answers all the same
        self.assertIsInstance(res[2], ShellError)
        self.assertIn('value_index_file "%s" is not usable' % self.index, res[2])
        main = [p for p in json.loads(res[3][0]["p"]) if p["database"] == "main"][0]
        self.assertTrue(main["state"].startswith("failed: "), main)  # never "complete"
        self.assertIn('value_index_file "%s" is not usable' % self.index, main["state"])
        self.assertEqual(file_digest(self.db), digest)
        # Removed, the file is made anew by agent_index().
        os.remove(self.index)
        res = self.ask_and_read()
        self.assertNotIsInstance(res[2], ShellError, res[2])
        built = json.loads(res[2][0]["b"])[0]
        self.assertEqual(built["state"], "complete")
        self.assertGreater(built["values"], 3000)
        main = [p for p in json.loads(res[3][0]["p"]) if p["database"] == "main"][0]
        self.assertEqual(main["state"], "complete")

    def test_corrupt_values_in_a_rollback_journal_database_are_an_error_naming_the_file(self):
        self.check_corrupt_values(wal=False)

    def test_corrupt_values_in_a_wal_database_are_an_error_naming_the_file(self):
        self.check_corrupt_values(wal=True)

    def test_a_file_whose_first_values_are_corrupt_is_refused_when_set(self):
        self.build_index(wal=False)
        leaves, root = self.pages_of_values()
        self.garble(root)
        res = self.ask_and_read()
        self.assertIsInstance(res[0], ShellError)
        self.assertIn('value_index_file "%s" is not usable: database disk image is malformed' % self.index,
                      res[0])
        # Not set: the connection's own temporary index serves it.
        self.assertEqual(res[1], [{"row": '{"n":100}'}])
        main = [p for p in json.loads(res[3][0]["p"]) if p["database"] == "main"][0]
        self.assertEqual((main["index_file"], main["state"]), ("", "complete"))

    def test_a_file_that_is_not_a_database_is_refused_when_set(self):
        with open(self.index, "wb") as f:
            f.write(b"not an index\n" * 1000)
        before = file_digest(self.index)
        res = self.ask_and_read()
        self.assertIsInstance(res[0], ShellError)
        self.assertIn('value_index_file "%s" is not usable: file is not a database' % self.index, res[0])
        self.assertEqual(file_digest(self.index), before)

    def test_an_index_file_of_another_shape_is_refused_when_set(self):
        con = sqlite3.connect(self.index)
        con.execute("CREATE TABLE qp_tables(id INTEGER PRIMARY KEY, label TEXT)")
        con.commit()
        con.close()
        res = self.ask_and_read()
        self.assertIsInstance(res[0], ShellError)
        self.assertIn('value_index_file "%s" is not usable' % self.index, res[0])
