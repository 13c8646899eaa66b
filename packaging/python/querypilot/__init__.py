"""QueryPilot for Python: the loadable extension, packaged.

    import sqlite3, querypilot
    con = sqlite3.connect("shop.db")
    querypilot.load(con)
    for (row,) in con.execute("SELECT row FROM ask('How many orders are there?')"):
        print(row)
    table = querypilot.answer_table(con, "orders_per_country", question)
    rows = con.execute("SELECT * FROM " + table).fetchall()
    querypilot.chart(con, run_id)   # an Altair chart, or the Vega-Lite spec

load() enables extension loading on the connection, loads QueryPilot, and
disables it again. It takes a connection of Python's sqlite3 module, which
can load extensions only where Python was built with
--enable-loadable-sqlite-extensions (Debian's python3 is; pyenv's default
builds and some macOS ones are not), or one of APSW (apsw.Connection), which
always can, or of a module with sqlite3's two methods (pysqlite3, say).
"""
import json
import os
import sqlite3

__version__ = "@QUERYPILOT_VERSION@"
__all__ = ["loadable_path", "load", "answer_table", "chart", "__version__"]

_NO_LOADING = (
    "this Python's sqlite3 module cannot load extensions: it was built without "
    "--enable-loadable-sqlite-extensions (pyenv's and some other builds are). Use APSW, which always "
    "can (pip install apsw, or Debian's python3-apsw; then querypilot.load(apsw.Connection(path))), "
    "Debian's /usr/bin/python3 (in a venv: /usr/bin/python3 -m venv), or rebuild Python with "
    "PYTHON_CONFIGURE_OPTS=--enable-loadable-sqlite-extensions"
)


def loadable_path():
    """The absolute path of the packaged library, querypilot.so, suffix
    included (as getLoadablePath() gives it in Node.js): a file that exists,
    which every client's load_extension() takes as it is."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "querypilot.so")


def _loading_methods(conn):
    """(enable, load) of a connection that can load extensions, or None.
    sqlite3's (and pysqlite3's) are enable_load_extension/load_extension;
    APSW's are enableloadextension/loadextension (newer APSW has both)."""
    for enable, load in (("enable_load_extension", "load_extension"), ("enableloadextension", "loadextension")):
        if callable(getattr(conn, enable, None)) and callable(getattr(conn, load, None)):
            return getattr(conn, enable), getattr(conn, load)
    return None


def load(conn):
    """Loads QueryPilot into `conn`: a sqlite3.Connection, an
    apsw.Connection, or a connection with sqlite3's enable_load_extension()
    and load_extension(). Extension loading is enabled for the load and
    disabled again after it, whatever happens. Raises TypeError for anything
    else, and RuntimeError, naming the ways forward, where the connection
    cannot load extensions."""
    methods = _loading_methods(conn)
    if isinstance(conn, sqlite3.Connection):
        if methods is None:
            raise RuntimeError(_NO_LOADING)
    elif methods is None:
        raise TypeError("querypilot.load() takes a sqlite3.Connection or an apsw.Connection, not %s"
                        % type(conn).__name__)
    enable, load_extension = methods
    try:
        enable(True)
    except Exception as e:  # a SQLite built with SQLITE_OMIT_LOAD_EXTENSION
        raise RuntimeError("this SQLite cannot load extensions: %s" % e) from e
    try:
        load_extension(loadable_path())
    finally:
        enable(False)


def _quote_name(name):
    return '"%s"' % name.replace('"', '""')


def _quote_text(text):
    return "'%s'" % text.replace("'", "''")


def answer_table(conn, name, question):
    """Asks `question` and makes its answer the table temp.`name` of `conn`
    (a connection QueryPilot is loaded into: sqlite3's, APSW's), with the
    answer's own columns. Returns the table's name quoted for SQL,
    'temp."name"', to select from.

    CREATE VIRTUAL TABLE ... USING ask(?) cannot take a bound parameter (a
    module's arguments are text SQLite does not evaluate), so the question
    is written into the statement as one string literal, each quote doubled:
    any text, quotes and newlines included, arrives as it was given. The
    name is quoted the same way as an identifier."""
    for what, value in (("name", name), ("question", question)):
        if not isinstance(value, str):
            raise TypeError("querypilot.answer_table(): the %s is a str, not %s" % (what, type(value).__name__))
        if "\0" in value:
            raise ValueError("querypilot.answer_table(): the %s contains a NUL character" % what)
    table = "temp." + _quote_name(name)
    conn.cursor().execute("CREATE VIRTUAL TABLE %s USING ask(%s)" % (table, _quote_text(question)))
    return table


def chart(conn, run_id):
    """A chart of the answer of run `run_id` (agent_runs.id) on `conn`:
    agent_chart(run_id)'s Vega-Lite v5 specification, as an Altair chart
    (altair.Chart, which a notebook shows) when Altair is installed, else as
    a dict. Altair 5 reads the specification with its schema checks; an
    older Altair (Debian's is 4), whose schema predates some of Vega-Lite 5,
    reads it without them. Raises the connection's error when the run has no
    chart (no rows, a single value, a shape no chart fits, no such run)."""
    if isinstance(run_id, bool) or not isinstance(run_id, int):
        raise TypeError("querypilot.chart(): the run id is an int, not %s" % type(run_id).__name__)
    row = conn.cursor().execute("SELECT agent_chart(?)", (run_id,)).fetchone()
    spec = json.loads(row[0])
    try:
        import altair
    except ImportError:
        return spec
    if int(altair.__version__.split(".")[0]) >= 5:
        return altair.Chart.from_dict(spec)
    return altair.Chart.from_dict(spec, validate=False)
