"""QueryPilot's own files (history_file, value_index_file) are never a file of
the user's connection, whatever name they are given: the identity of what
SQLite would open is compared, not the spelling. Every refused form leaves
the database file byte-for-byte the same."""
import os
import sqlite3
import urllib.parse

from harness import LLMTestCase, ShellError, connect, file_digest, make_shop_db, session, sql_reply

COUNT_SQL = "SELECT COUNT(*) AS n FROM orders"
SCRIPT = {"rules": [{"match": "orders are there", "replies": [sql_reply(COUNT_SQL)]}]}
OWN_TABLES = {"querypilot_runs", "querypilot_attempts", "querypilot_descriptions", "querypilot_next_run",
              "qp_values", "qp_columns", "qp_tables", "qp_buckets", "qp_pending"}


def quoted(text):
    return "'%s'" % text.replace("'", "''")


class OwnFileIdentityTest(LLMTestCase):
    def setUp(self):
        super().setUp()
        # The database under other names: a symlink, a hard link.
        self.symlink = os.path.join(self.tmp, "alias.db")
        os.symlink(self.db, self.symlink)
        self.hardlink = os.path.join(self.tmp, "hard.db")
        os.link(self.db, self.hardlink)
        self.folder = os.path.basename(self.tmp)
        escaped = urllib.parse.quote(self.db)  # %2F-free; letters stay
        self.forms = [
            ("plain", self.db),
            ("dot", "./shop.db"),
            ("dotdot", "../%s/shop.db" % self.folder),
            ("symlink", self.symlink),
            ("hard link", self.hardlink),
            ("file: relative", "file:shop.db"),
            ("file: with parameters", "file:%s?mode=rw&cache=shared" % self.db),
            ("file:// empty authority", "file://%s?vfs=unix-excl" % self.db),
            ("file://localhost", "file://localhost%s" % self.db),
            ("file: escaped", "file:" + escaped.replace("shop", "sh%6Fp")),
            ("file: fragment", "file:%s#part" % self.db),
            ("its journal", self.db + "-journal"),
            ("its WAL", self.db + "-wal"),
            ("its WAL by a URI", "file:../%s/shop.db-wal?mode=rwc" % self.folder),
        ]

    def own_tables(self, path):
        con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
        try:
            return {r[0] for r in con.execute("SELECT name FROM sqlite_master")} & OWN_TABLES
        finally:
            con.close()

    def check_refused(self, setting):
        before = file_digest(self.db)
        statements = ["SELECT agent_config('%s', %s)" % (setting, quoted(form)) for _, form in self.forms]
        statements += ["SELECT * FROM ask('How many orders are there?')",
                       "SELECT agent_config('%s') AS f" % setting]
        self.llm.load(SCRIPT)
        res = session(self.db, statements, self.llm.env(), cwd=self.tmp)
        for (name, form), r in zip(self.forms, res):
            self.assertIsInstance(r, ShellError, "%s: %s was accepted" % (name, form))
            self.assertIn("%s must be a file of its own" % setting, r, name)
        self.assertEqual(res[-2], [{"row": '{"n":100}'}])
        if setting == "history_file":
            # None was taken: the ask kept its run in the database's default
            # history file, in the cache folder.
            shown = res[-1][0]["f"]
            self.assertTrue(shown.startswith(os.path.realpath(os.environ["XDG_CACHE_HOME"]) + "/querypilot/history/"),
                            shown)
        else:
            self.assertEqual(res[-1], [{"f": ""}])
        self.assertEqual(file_digest(self.db), before)
        self.assertEqual(self.own_tables(self.db), set())
        for companion in ("-journal", "-wal"):  # nothing created beside it either
            self.assertFalse(os.path.exists(self.db + companion), companion)

    def test_history_file_refuses_the_database_under_every_name(self):
        self.check_refused("history_file")

    def test_value_index_file_refuses_the_database_under_every_name(self):
        self.check_refused("value_index_file")

    def test_names_whose_identity_cannot_be_established_are_refused(self):
        before = file_digest(self.db)
        forms = [":memory:", "file::memory:", "file:x.db?mode=memory", "file:%s?vfs=memdb" % self.db,
                 "file://elsewhere%s" % self.db, os.path.join(self.tmp, "no-such-folder", "h.db")]
        dangling = os.path.join(self.tmp, "dangling.db")
        os.symlink(os.path.join(self.tmp, "shop.db-wal"), dangling)
        forms.append(dangling)
        statements = []
        for setting in ("history_file", "value_index_file"):
            statements += ["SELECT agent_config('%s', %s)" % (setting, quoted(f)) for f in forms]
        self.llm.load(SCRIPT)
        res = session(self.db, statements, self.llm.env(), cwd=self.tmp)
        for statement, r in zip(statements, res):
            self.assertIsInstance(r, ShellError, statement)
        self.assertIn("must name a file on disk", res[0])
        self.assertIn("the VFS \"memdb\"", res[3])
        self.assertIn("invalid uri authority: elsewhere", res[4])
        self.assertIn("cannot tell which file that is", res[5])
        self.assertIn("cannot tell which file that is", res[6])
        self.assertFalse(os.path.exists(self.db + "-wal"))
        self.assertEqual(file_digest(self.db), before)

    def test_a_uri_naming_a_file_of_its_own_is_accepted(self):
        history = os.path.join(self.tmp, "history.db")
        index = os.path.join(self.tmp, "index.db")
        self.llm.load(SCRIPT)
        res = session(self.db, [
            "SELECT agent_config('history_file', 'file:history.db?mode=rwc') AS f",
            "SELECT agent_config('value_index_file', %s) AS f" % quoted("file://" + index),
            "SELECT * FROM ask('How many orders are there?')",
        ], self.llm.env(), cwd=self.tmp)
        for r in res:
            self.assertNotIsInstance(r, ShellError, r)
        self.assertEqual(self.own_tables(history), {"querypilot_runs", "querypilot_attempts",
                                                    "querypilot_descriptions", "querypilot_next_run"})
        self.assertEqual(self.own_tables(index), {"qp_values", "qp_columns", "qp_tables", "qp_buckets",
                                                  "qp_pending"})
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "file:history.db?mode=rwc")))

    def test_a_file_attached_later_is_refused_at_the_next_ask(self):
        history = os.path.join(self.tmp, "history.db")
        index = os.path.join(self.tmp, "index.db")
        # The index file, made now and hard-linked, so that the link shares
        # its inode from the start.
        sqlite3.connect(index).close()
        os.link(index, index + ".link")
        self.llm.load(SCRIPT)
        res = session(self.db, [
            "SELECT agent_config('history_file', %s) AS f" % quoted(history),
            "SELECT agent_config('value_index_file', %s) AS f" % quoted(index),
            "SELECT * FROM ask('How many orders are there?')",
            # The history file comes back as a database of the connection.
            "ATTACH %s AS kept" % quoted(os.path.join(self.tmp, "..", self.folder, "history.db")),
            "SELECT * FROM ask('How many orders are there? (again)')",
            "SELECT agent_feedback(1, 'good')",
            "SELECT agent_describe('orders', 'one row per order')",
            "SELECT agent_forget(1)",
            "DETACH kept",
            "SELECT * FROM ask('How many orders are there? (after)')",
            # The index file, attached under another name through a hard link.
            "ATTACH %s AS idx" % quoted(index + ".link"),
            "SELECT * FROM ask('How many orders are there? (index)')",
            "DETACH idx",
            "SELECT id FROM agent_runs ORDER BY id",
        ], self.llm.env(), cwd=self.tmp)
        self.assertNotIsInstance(res[2], ShellError, res[2])
        for i in (4, 5, 6, 7):
            self.assertIsInstance(res[i], ShellError, i)
            self.assertIn("history_file must be a file of its own", res[i])
            self.assertIn("it is the database \"kept\"", res[i])
        self.assertNotIsInstance(res[9], ShellError, res[9])
        self.assertIsInstance(res[11], ShellError)
        self.assertIn("value_index_file must be a file of its own", res[11])
        self.assertIn("\"idx\"", res[11])
        # Runs 1 and 2 only: the refused asks ran nothing and recorded nothing,
        # and the refused agent_forget(1) forgot nothing.
        self.assertEqual(res[13], [{"id": 1}, {"id": 2}])


class OtherConnectionTest(LLMTestCase):
    """A database another connection of the same process has open (one that
    loaded QueryPilot) is refused as well: SQLite keeps no list of a
    process's connections, so each session registers its own."""

    def open(self, db):
        con = connect(db, self.llm.env(), isolation_level=None)
        self.addCleanup(con.close)
        return con

    def test_another_connections_database_is_refused_while_it_is_open(self):
        self.llm.load(SCRIPT)
        other_db = make_shop_db(self.tmp, "other.db")
        before = file_digest(other_db)
        mine = self.open(self.db)
        other = self.open(other_db)
        with self.assertRaises(sqlite3.OperationalError) as refused:
            mine.execute("SELECT agent_config('history_file', ?)", (other_db,)).fetchall()
        self.assertIn("history_file must be a file of its own, never a database of this connection or of another "
                      "in this process", str(refused.exception))
        self.assertIn("it is the database \"main\" of another connection in this process (%s)" % other_db,
                      str(refused.exception))
        with self.assertRaises(sqlite3.OperationalError):
            mine.execute("SELECT agent_config('value_index_file', ?)", (other_db,)).fetchall()
        self.assertEqual(file_digest(other_db), before)
        # A file it attached since its load is known once it asked.
        extra = make_shop_db(self.tmp, "extra.db")
        other.execute("ATTACH ? AS extra", (extra,))
        self.assertEqual(other.execute("SELECT row FROM ask('How many orders are there?')").fetchall(),
                         [('{"n":100}',)])
        with self.assertRaises(sqlite3.OperationalError) as attached:
            mine.execute("SELECT agent_config('history_file', ?)", (extra,)).fetchall()
        self.assertIn("it is the database \"extra\" of another connection in this process",
                      str(attached.exception))
        # A history file that another connection opens later as its database
        # stops this one's asks until that connection is closed.
        history = os.path.join(self.tmp, "history.db")
        mine.execute("SELECT agent_config('history_file', ?)", (history,))
        self.assertEqual(mine.execute("SELECT row FROM ask('How many orders are there?')").fetchall(),
                         [('{"n":100}',)])
        reader = connect(history, self.llm.env())
        try:
            with self.assertRaises(sqlite3.OperationalError) as later:
                mine.execute("SELECT row FROM ask('How many orders are there? (again)')").fetchall()
            self.assertIn("of another connection in this process", str(later.exception))
        finally:
            reader.close()
        self.assertEqual(mine.execute("SELECT row FROM ask('How many orders are there? (after)')").fetchall(),
                         [('{"n":100}',)])
        self.assertEqual(mine.execute("SELECT id FROM agent_runs").fetchall(), [(1,), (2,)])
