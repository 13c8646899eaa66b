"""QueryPilot for Python's sqlite3 module: the loadable extension, packaged.

    import sqlite3, querypilot
    con = sqlite3.connect("shop.db")
    querypilot.load(con)
    for (row,) in con.execute("SELECT row FROM ask('How many orders are there?')"):
        print(row)

load() enables extension loading on the connection, loads QueryPilot, and
disables it again. It needs a Python whose sqlite3 module can load extensions
(Debian's python3 can; pyenv's default builds cannot).
"""
import os
import sqlite3

__version__ = "@QUERYPILOT_VERSION@"
__all__ = ["loadable_path", "load", "__version__"]

_NO_LOADING = (
    "this Python's sqlite3 module cannot load extensions: it was built without "
    "--enable-loadable-sqlite-extensions (pyenv's and some other builds are). Use Debian's "
    "/usr/bin/python3, or rebuild Python with PYTHON_CONFIGURE_OPTS=--enable-loadable-sqlite-extensions"
)


def loadable_path():
    """The path of the packaged querypilot.so, as load_extension() takes it
    (SQLite adds the .so suffix itself)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "querypilot")


def load(conn):
    """Loads QueryPilot into the sqlite3 connection `conn`: extension loading
    is enabled for the load and disabled again after it."""
    if not isinstance(conn, sqlite3.Connection):
        raise TypeError("querypilot.load() takes a sqlite3.Connection, not %s" % type(conn).__name__)
    if not hasattr(conn, "enable_load_extension"):
        raise RuntimeError(_NO_LOADING)
    try:
        conn.enable_load_extension(True)
    except sqlite3.Error as e:  # a SQLite built with SQLITE_OMIT_LOAD_EXTENSION
        raise RuntimeError("this SQLite cannot load extensions: %s" % e) from e
    try:
        conn.load_extension(loadable_path())
    finally:
        conn.enable_load_extension(False)
