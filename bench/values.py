#!/usr/bin/env python3
"""The value index at the size of a real database, in each journal mode.

Generates a shop database of N customers (each with a name and e-mail of
their own, one of 500 cities and 8 countries), 2N orders (5 statuses and a
free-text note) and 20,000 products, for each N asked for. Each mode runs on
a copy of it: "wal" (read in the background), "rollback" (SQLite's default
journal: read by the asks, within their budget) and "rollback+build"
(SELECT agent_index() run first, as docs/usage.md tells users of big files).
Asking through Python's sqlite3 module against the scripted model on
127.0.0.1 (which answers at once), it reports:

  first ask      QueryPilot's own time in the first ask of a connection
                 (whole ask minus the model call and the answer's SQL
                 running: node_times execute), and the value index's part;
  build          rollback+build: agent_index()'s time and the process's peak
                 RSS growth over it; wal: time until agent_config('value_index')
                 says complete, and RSS growth while it reads;
  paying asks    of 40 asks in a row, how many spent over 5 ms in the value
                 index, among the first 20 and the last 20; the median own
                 time of the last 20 (warm asks);
  hinted at 15 s 15 s after the first ask, whether a country, a status word,
                 a full name and a city named in a question are hinted;
  after inserts  1,000 customers inserted through the same connection: the
                 next ask's own time, and whether a name only they hold is
                 hinted;
  coverage       generated questions naming a stored value of each kind
                 (name, e-mail, city, country, status, product): the share
                 whose prompt lists that value;
  next connection
                 after the connection closes: which of -wal and -shm are
                 left; then a new connection of the same process: its first
                 ask's own time and index part, how many of 20 asks after it
                 pay for reading, their median own time, and whether a name
                 inserted before the close is hinted;
  index file     wal: a second process with value_index_file builds the
                 index file (time until complete), and a third process
                 reuses it on the unchanged database (time until complete).

With --waits it measures instead what an ask waits for the index, each case
in a process of its own, in rollback and WAL mode, without a kept index
(value_index_cache 0) and with one (a complete index kept in the cache folder
by an earlier process): the first ask's own time and index part, then the
index part of 20 asks in a row (median and max), against what docs/usage.md
promises each (rollback: value_index_ask_ms' 60 ms slice; WAL: the first ask
waits value_index_wait_ms, later ones only catch up on their own writes).

Usage: bench/values.py [--sizes 100000,1000000] [--modes wal,rollback,rollback+build]
                       [--build DIR] [--keep DIR] [--waits]
"""
import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import connect  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

SYLLABLES = ["an", "bel", "cor", "da", "el", "fin", "gar", "hal", "is", "jo", "ka", "lin", "mar", "nor",
             "ol", "pet", "quin", "ros", "sal", "tor", "ul", "val", "wen", "xan", "yor", "zel", "bra",
             "cle", "dri", "fro", "gla", "hel", "ivo", "jun", "kle", "lor", "mon", "nev", "ost", "pra"]
CITIES = ["Lyon", "Paris", "Berlin", "Madrid", "Lisbon", "Rome", "Vienna", "Prague", "Warsaw", "Oslo"]
COUNTRIES = ["France", "Germany", "Spain", "Portugal", "Italy", "Austria", "Czechia", "Norway"]
STATUSES = ["pending", "paid", "shipped", "delivered", "refunded"]


def make_db(path, n):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE syl(i INTEGER PRIMARY KEY, s TEXT)")
    con.executemany("INSERT INTO syl VALUES (?, ?)", list(enumerate(SYLLABLES)))
    con.execute("CREATE TABLE city_names(i INTEGER PRIMARY KEY, name TEXT)")
    con.executemany("INSERT INTO city_names VALUES (?, ?)",
                    [(i, CITIES[i] if i < len(CITIES) else "City%03d" % i) for i in range(500)])
    con.executescript("""
        CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL,
                               city TEXT NOT NULL, country TEXT NOT NULL);
        CREATE TABLE products(id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL);
        CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id),
                            product_id INTEGER REFERENCES products(id), status TEXT NOT NULL,
                            note TEXT, amount REAL);
    """)
    # Names from syllables: first and last name, unique for the first
    # 40^4 = 2,560,000 customers.
    con.execute("""
        WITH RECURSIVE k(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM k WHERE x < ?1 - 1)
        INSERT INTO customers(id, name, email, city, country)
        SELECT x + 1,
               upper(substr(a.s, 1, 1)) || substr(a.s, 2) || b.s || ' ' ||
               upper(substr(c.s, 1, 1)) || substr(c.s, 2) || d.s || 'son',
               a.s || b.s || '.' || c.s || d.s || (x / 2560000) || '@example.com',
               (SELECT name FROM city_names WHERE i = k.x % 500),
               CASE k.x % 8 WHEN 0 THEN 'France' WHEN 1 THEN 'Germany' WHEN 2 THEN 'Spain'
                 WHEN 3 THEN 'Portugal' WHEN 4 THEN 'Italy' WHEN 5 THEN 'Austria' WHEN 6 THEN 'Czechia'
                 ELSE 'Norway' END
        FROM k JOIN syl AS a ON a.i = k.x % 40 JOIN syl AS b ON b.i = (k.x / 40) % 40
               JOIN syl AS c ON c.i = (k.x / 1600) % 40 JOIN syl AS d ON d.i = (k.x / 64000) % 40
    """, (n,))
    con.execute("""
        WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 20000)
        INSERT INTO products SELECT i, 'Product ' || printf('%05d', i), (i % 100) + 0.99 FROM k
    """)
    con.execute("""
        WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?1 * 2)
        INSERT INTO orders SELECT i, (i * 7919) % ?1 + 1, (i * 31) % 20000 + 1,
               CASE i % 5 WHEN 0 THEN 'pending' WHEN 1 THEN 'paid' WHEN 2 THEN 'shipped'
                 WHEN 3 THEN 'delivered' ELSE 'refunded' END,
               'Customer asked for delivery after six in the evening, order number ' || i,
               (i % 997) * 1.5
        FROM k
    """, (n,))
    con.execute("DROP TABLE syl")
    con.execute("DROP TABLE city_names")
    con.commit()
    con.close()


def rss_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def ask(con, question):
    t0 = time.perf_counter()
    con.execute("SELECT row FROM ask(?)", (question,)).fetchall()
    wall = (time.perf_counter() - t0) * 1000.0
    llm_ms, node_times = con.execute(
        "SELECT llm_ms, node_times FROM agent_runs ORDER BY id DESC LIMIT 1").fetchone()
    nodes = json.loads(node_times or "{}")
    # QueryPilot's own time: not the model's, nor the answer's SQL running.
    return wall - llm_ms - nodes.get("execute", 0.0), nodes.get("load_schema/value_index", 0.0)


def progress(con):
    return [p for p in json.loads(con.execute("SELECT agent_config('value_index')").fetchone()[0])
            if p["database"] == "main"][0]


def last_prompt(llm):
    log = llm.log()
    return log[-1]["body"]["messages"][1]["content"] if log else ""


def questions(con, rnd):
    """Generated questions naming stored values, by kind."""
    n = con.execute("SELECT max(id) FROM customers").fetchone()[0]
    out = []
    for _ in range(10):
        name, email, city, country = con.execute(
            "SELECT name, email, city, country FROM customers WHERE id = ?", (rnd.randint(1, n),)).fetchone()
        out.append(("name", "What did %s order last year?" % name, name))
        out.append(("email", "Which customer has the e-mail %s?" % email, email))
        out.append(("city", "How many customers live in %s?" % city, city))
        out.append(("country", "What is the revenue from customers in %s?" % country, country))
        status = rnd.choice(STATUSES)
        out.append(("status", "How many orders are %s?" % status, status))
        product = "Product %05d" % rnd.randint(1, 20000)
        out.append(("product", "Who bought %s?" % product, product))
    return out


def second_process(extension, db, index, base):
    code = """
import json, sys, time
sys.path.insert(0, %r)
from benchlib import connect
con = connect(%r, %r, %r)
con.execute("SELECT agent_config('value_index_file', ?)", (%r,))
con.execute("SELECT agent_config('value_index_wait_ms', 0)")
t0 = time.perf_counter()
con.execute("SELECT row FROM ask('How many customers are there?')").fetchall()
while True:
    p = [p for p in json.loads(con.execute("SELECT agent_config('value_index')").fetchone()[0]) if p["database"] == "main"][0]
    if p["state"] == "complete":
        break
    time.sleep(0.01)
print((time.perf_counter() - t0) * 1000.0)
""" % (HERE, extension, db, base, index)
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout.strip())


def kind_questions(con, rnd):
    """One question per kind of value the issue names: a low-cardinality
    value (country), a status word, a full name, a city."""
    n = con.execute("SELECT max(id) FROM customers").fetchone()[0]
    name, city, country = con.execute("SELECT name, city, country FROM customers WHERE id = ?",
                                      (rnd.randint(1, n),)).fetchone()
    return [("country", "What is the revenue from customers in %s?" % country, country),
            ("status", "How many orders are %s?" % rnd.choice(STATUSES), None),
            ("name", "What did %s order last year?" % name, name),
            ("city", "How many customers live in %s?" % city, city)]


def hinted(llm, value):
    return ("'%s'" % value.replace("'", "''")) in last_prompt(llm)


def run(size, mode, base_db, tmp, extension, llm):
    """One journal mode on a copy of the generated database: "wal" (read in
    the background), "rollback" (read by the asks), "rollback+build"
    (SELECT agent_index() first, as a user of a big file is told to)."""
    db = os.path.join(tmp, "shop_%d_%s.db" % (size, mode.replace("+", "_")))
    index = db + ".qpindex"
    for path in (db, db + "-wal", db + "-shm", db + "-journal", index, index + "-wal", index + "-shm"):
        if os.path.exists(path):
            os.remove(path)
    shutil.copyfile(base_db, db)
    c = sqlite3.connect(db)
    c.execute("PRAGMA journal_mode = %s" % ("WAL" if mode == "wal" else "DELETE"))
    c.close()
    r = {"rows": size, "mode": mode, "db_mb": round(os.path.getsize(db) / 1e6, 1)}
    rss0 = rss_kb("VmRSS")
    con = connect(extension, db, llm.base)
    t0 = time.perf_counter()
    r["first_ask_ms"], r["first_ask_index_ms"] = ask(con, "How many customers are there?")
    if mode == "rollback+build":
        hwm0 = rss_kb("VmHWM")
        b0 = time.perf_counter()
        built = json.loads(con.execute("SELECT agent_index()").fetchone()[0])
        r["build_s"] = round(time.perf_counter() - b0, 2)
        r["build_peak_rss_growth_mb"] = round((rss_kb("VmHWM") - max(hwm0, rss0)) / 1024.0, 1)
        r["values"] = [b for b in built if b["database"] == "main"][0]["values"]
    # 40 asks in a row: how many pay for reading (the value index's part
    # over 5 ms), early and late, and the own time of the last 20.
    seq = [ask(con, "How many orders are refunded?") for _ in range(40)]
    r["paying_asks_first_20"] = sum(1 for _, i in seq[:20] if i > 5.0)
    r["paying_asks_last_20"] = sum(1 for _, i in seq[20:] if i > 5.0)
    r["warm_ask_ms_median"] = round(statistics.median(w for w, _ in seq[20:]), 2)
    r["warm_index_ms_median"] = round(statistics.median(i for _, i in seq[20:]), 2)
    # What is hinted 15 s after the first ask (in WAL mode, noting when the
    # background build completes meanwhile).
    complete_at = None
    while time.perf_counter() - t0 < 15.0:
        if mode == "wal" and complete_at is None and progress(con)["state"] == "complete":
            complete_at = time.perf_counter() - t0
        time.sleep(0.05)
    rnd = random.Random(size)
    r["hinted_at_15s"] = {}
    for kind, q, value in kind_questions(con, rnd):
        ask(con, q)
        if value is None:
            value = q.split(" are ")[1].rstrip("?")
        r["hinted_at_15s"][kind] = hinted(llm, value)
    if mode == "wal":
        hwm = rss_kb("VmRSS")
        while progress(con)["state"] != "complete":
            hwm = max(hwm, rss_kb("VmRSS"))
            time.sleep(0.05)
        r["build_s"] = round(complete_at if complete_at is not None else time.perf_counter() - t0, 2)
        r["values"] = progress(con)["values"]
        r["build_peak_rss_growth_mb"] = round((max(hwm, rss_kb("VmHWM")) - rss0) / 1024.0, 1)
    r["state"] = progress(con)["state"]
    # 1,000 customers with a name nobody else has, through this connection.
    con.executemany("INSERT INTO customers(name, email, city, country) VALUES (?, ?, 'Lyon', 'France')",
                    [("Newcomer%04d Smith" % i, "new%d@example.com" % i) for i in range(1000)])
    con.commit()
    r["after_insert_ask_ms"], r["after_insert_index_ms"] = ask(con, "What did Newcomer0999 Smith order?")
    r["after_insert_hinted"] = hinted(llm, "Newcomer0999 Smith")
    by_kind = {}
    for kind, q, value in questions(con, rnd):
        ask(con, q)
        by_kind.setdefault(kind, []).append(hinted(llm, value))
    r["coverage"] = {k: "%d/%d" % (sum(v), len(v)) for k, v in by_kind.items()}
    con.close()
    # Closing the only connection leaves the files as SQLite would: in WAL
    # mode no -wal or -shm file stays.
    r["left_after_close"] = [s for s in ("-wal", "-shm") if os.path.exists(db + s)]
    # The next connection of the same process (a tool that opens one per
    # request): its first ask, and 20 asks in a row after it.
    con = connect(extension, db, llm.base)
    r["next_first_ask_ms"], r["next_first_ask_index_ms"] = ask(con, "How many customers are there?")
    seq = [ask(con, "How many orders are refunded?") for _ in range(20)]
    r["next_paying_asks_20"] = sum(1 for _, i in seq if i > 5.0)
    r["next_warm_ask_ms_median"] = round(statistics.median(w for w, _ in seq), 2)
    ask(con, "What did Newcomer0998 Smith order?")
    r["next_hinted"] = hinted(llm, "Newcomer0998 Smith")
    con.close()
    if mode == "wal":
        r["index_file_build_s"] = round(second_process(extension, db, index, llm.base) / 1000.0, 2)
        r["index_file_reuse_ms"] = round(second_process(extension, db, index, llm.base), 1)
    for k in ("first_ask_ms", "first_ask_index_ms", "after_insert_ask_ms", "after_insert_index_ms",
              "next_first_ask_ms", "next_first_ask_index_ms"):
        r[k] = round(r[k], 2)
    for path in (db, db + "-wal", db + "-shm", index, index + "-wal", index + "-shm"):
        if os.path.exists(path):
            os.remove(path)
    return r


WAIT_CHILD = """
import json, sqlite3, sys, time
sys.path.insert(0, %r)
from benchlib import connect
from values import ask, progress
con = connect(%r, %r, %r)
try:
    con.execute("SELECT agent_config('value_index_cache', ?)", (%d,))
except sqlite3.Error:
    pass  # a build without the setting: no kept index

out = {"asks": []}
for i in range(21):
    own, index = ask(con, "How many orders are refunded?")
    out["asks"].append([own, index])
p = progress(con)
out["state"] = p["state"]
out["index_file"] = p.get("index_file", "")
if %r == "build":
    if progress(con)["read"] != "background":
        con.execute("SELECT agent_index()").fetchall()
    while progress(con)["state"] != "complete":
        time.sleep(0.05)
    out["state"] = progress(con)["state"]
con.close()
print(json.dumps(out))
"""


def wait_case(extension, db, base, cache, then=""):
    code = WAIT_CHILD % (HERE, extension, db, base, cache, then)
    return json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                     check=True, cwd=HERE).stdout.strip().splitlines()[-1])


def waits(size, base_db, tmp, extension, llm):
    """What asks wait for the index, per journal mode, with and without a
    kept index; each case in a fresh process."""
    rows = []
    for mode in ("rollback", "wal"):
        for kept in (False, True):
            db = os.path.join(tmp, "waits_%d_%s.db" % (size, mode))
            for suffix in ("", "-wal", "-shm", "-journal"):
                if os.path.exists(db + suffix):
                    os.remove(db + suffix)
            shutil.copyfile(base_db, db)
            c = sqlite3.connect(db)
            c.execute("PRAGMA journal_mode = %s" % ("WAL" if mode == "wal" else "DELETE"))
            c.close()
            cache_home = os.path.join(tmp, "cache_%s" % mode)
            shutil.rmtree(cache_home, ignore_errors=True)
            os.environ["XDG_CACHE_HOME"] = cache_home
            if kept:
                # An earlier process reads the file whole into the cache.
                wait_case(extension, db, llm.base, 1, "build")
            r = wait_case(extension, db, llm.base, 1 if kept else 0)
            asks = r["asks"]
            later = [i for _, i in asks[1:]]
            # The promise: rollback, each ask reads 60 ms at most; WAL, the
            # first ask waits value_index_wait_ms (50) at most and later asks
            # do not wait for the background.
            limit_first, limit_later = (60.0, 60.0) if mode == "rollback" else (50.0, 15.0)
            rows.append({
                "rows": size, "mode": mode, "kept index": "yes" if kept else "no",
                "first ask own ms": round(asks[0][0], 2), "first ask index ms": round(asks[0][1], 2),
                "later index ms median": round(statistics.median(later), 2),
                "later index ms max": round(max(later), 2),
                "within": asks[0][1] <= limit_first and max(later) <= limit_later,
                "state after 21 asks": r["state"],
            })
            print(json.dumps(rows[-1]), flush=True)
            for suffix in ("", "-wal", "-shm", "-journal"):
                if os.path.exists(db + suffix):
                    os.remove(db + suffix)
    cols = list(rows[0].keys())
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--modes", default="wal,rollback,rollback+build")
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--keep", help="generate the databases here and keep them")
    ap.add_argument("--waits", action="store_true",
                    help="measure what asks wait for the index (rollback, WAL; with and without a kept index)")
    args = ap.parse_args()
    os.environ["QP_BUILD_DIR"] = os.path.abspath(args.build)
    import harness  # noqa: E402 (needs QP_BUILD_DIR)
    tmp = args.keep or tempfile.mkdtemp(prefix="qp-bench-values-")
    os.makedirs(tmp, exist_ok=True)
    llm = harness.ScriptedLLM({"default": "```sql\nSELECT name FROM customers WHERE id = 1;\n```"})
    try:
        results = []
        for size in [int(s) for s in args.sizes.split(",")]:
            base = os.path.join(tmp, "shop_%d.db" % size)
            if not os.path.exists(base):
                t0 = time.time()
                make_db(base, size)
                print("generated %d customers in %.1f s" % (size, time.time() - t0), flush=True)
            if args.waits:
                waits(size, base, tmp, harness.EXTENSION, llm)
                continue
            for mode in args.modes.split(","):
                r = run(size, mode, base, tmp, harness.EXTENSION, llm)
                results.append(r)
                print(json.dumps(r), flush=True)
        if args.waits:
            return
        cols = ["rows", "mode", "first_ask_ms", "build_s", "values", "build_peak_rss_growth_mb",
                "paying_asks_first_20", "paying_asks_last_20", "warm_ask_ms_median", "after_insert_ask_ms",
                "after_insert_hinted", "state", "left_after_close", "next_first_ask_ms", "next_paying_asks_20",
                "next_warm_ask_ms_median", "next_hinted"]
        print("| " + " | ".join(cols) + " | hinted at 15 s | coverage |")
        print("|" + "---|" * (len(cols) + 2))
        for r in results:
            print("| " + " | ".join(str(r.get(c, "")) for c in cols) + " | " +
                  ", ".join(k for k, v in r["hinted_at_15s"].items() if v) + " | " +
                  ", ".join("%s %s" % kv for kv in r["coverage"].items()) + " |")
    finally:
        llm.close()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
