#!/usr/bin/env python3
"""The value index's size and costs against the database's, at 1M and 10M rows.

Generates, under /tmp and never downloaded, a rollback-journal shop file of N
customers (a name and an e-mail of their own each, one of 500 cities, so that
a city is held by 1 customer in 500, and the city's code) and 2N orders (5
statuses, an order date), for each N asked for. With XDG_CACHE_HOME in the
same folder, through Python's sqlite3 module against the scripted model on
127.0.0.1 (which answers at once), it prints:

  db_mb, index_mb  the database file's bytes and the kept index's (the cache
                   folder's files), and their ratio;
  build_s          SELECT agent_index() on the first connection;
  first_ask_ms     QueryPilot's own time (the whole ask less the model call and
                   the answer's SQL: node_times execute) in the first ask of a
                   new connection, after the build;
  warm_ask_ms      the median own time of 20 asks after it;
  hinted           whether the prompt lists each of 4 values a question names:
                   a city, an order status, one person's name, a city code;
  after_insert     1,000 customers inserted through the connection: the next
                   ask's own time, and whether a name only they hold is hinted.

Usage: /usr/bin/python3 bench/value_index.py [--sizes 1000000,10000000] [--build DIR] [--keep DIR]
The files are removed afterwards unless --keep is given.
"""
import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import connect  # noqa: E402
from values import ask, hinted  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

SYLLABLES = ["an", "bel", "cor", "da", "el", "fin", "gar", "hal", "is", "jo", "ka", "lin", "mar", "nor",
             "ol", "pet", "quin", "ros", "sal", "tor", "ul", "val", "wen", "xan", "yor", "zel", "bra",
             "cle", "dri", "fro", "gla", "hel", "ivo", "jun", "kle", "lor", "mon", "nev", "ost", "pra"]
STATUSES = ["pending", "paid", "shipped", "delivered", "refunded"]


def make_db(path, n):
    """N customers with names and e-mails of their own (40^5 = 102,400,000
    names), 500 cities with a code each, 2N orders."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    con.execute("CREATE TEMP TABLE syl(i INTEGER PRIMARY KEY, s TEXT)")
    con.executemany("INSERT INTO syl VALUES (?, ?)", list(enumerate(SYLLABLES)))
    con.execute("CREATE TEMP TABLE city_names(i INTEGER PRIMARY KEY, name TEXT, code TEXT)")
    rnd = random.Random(7)
    cities = []
    for i in range(500):
        name = "".join(rnd.choice(SYLLABLES) for _ in range(3)).capitalize() + ("ville" if i % 2 else "burg")
        cities.append((i, name, "%s%03d" % (name[:2].upper(), i)))
    con.executemany("INSERT INTO city_names VALUES (?, ?, ?)", cities)
    con.executescript("""
        CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL,
                               city TEXT NOT NULL, city_code TEXT NOT NULL);
        CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id),
                            status TEXT NOT NULL, ordered_on TEXT NOT NULL, amount REAL);
    """)
    con.execute("""
        WITH RECURSIVE k(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM k WHERE x < ?1 - 1)
        INSERT INTO customers(id, name, email, city, city_code)
        SELECT x + 1,
               upper(substr(a.s, 1, 1)) || substr(a.s, 2) || b.s || ' ' ||
               upper(substr(c.s, 1, 1)) || substr(c.s, 2) || d.s || e.s || 'son',
               a.s || b.s || '.' || c.s || d.s || e.s || '@example.com',
               t.name, t.code
        FROM k JOIN syl AS a ON a.i = k.x % 40 JOIN syl AS b ON b.i = (k.x / 40) % 40
               JOIN syl AS c ON c.i = (k.x / 1600) % 40 JOIN syl AS d ON d.i = (k.x / 64000) % 40
               JOIN syl AS e ON e.i = (k.x / 2560000) % 40
               JOIN city_names AS t ON t.i = (k.x * 7) % 500
    """, (n,))
    con.execute("""
        WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?1 * 2)
        INSERT INTO orders SELECT i, (i * 7919) % ?1 + 1,
               CASE i % 5 WHEN 0 THEN 'pending' WHEN 1 THEN 'paid' WHEN 2 THEN 'shipped'
                 WHEN 3 THEN 'delivered' ELSE 'refunded' END,
               date('2022-01-01', '+' || (i % 1096) || ' days'), (i % 997) * 1.5
        FROM k
    """, (n,))
    con.commit()
    con.execute("PRAGMA journal_mode = DELETE")
    con.close()


def folder_bytes(folder):
    total = 0
    for root, _, files in os.walk(folder):
        for f in files:
            p = os.path.join(root, f)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return total


def measure(size, db, tmp, extension, llm):
    cache = os.path.join(tmp, "cache")
    shutil.rmtree(cache, ignore_errors=True)
    os.environ["XDG_CACHE_HOME"] = cache
    r = {"rows": size, "db_mb": round(os.path.getsize(db) / 1e6, 1)}
    con = connect(extension, db, llm.base)
    con.execute("SELECT agent_config('value_index_ask_ms', 0)")  # the build reads it all
    t0 = time.perf_counter()
    built = json.loads(con.execute("SELECT agent_index()").fetchone()[0])
    r["build_s"] = round(time.perf_counter() - t0, 2)
    main = [b for b in built if b["database"] == "main"][0]
    r["state"] = main["state"]
    con.close()
    r["index_mb"] = round(folder_bytes(cache) / 1e6, 1)
    r["index_to_db"] = round(folder_bytes(cache) / os.path.getsize(db), 3)
    # A new connection: its first ask, then 20 warm ones.
    con = connect(extension, db, llm.base)
    r["first_ask_ms"] = round(ask(con, "How many customers are there?")[0], 2)
    warm = [ask(con, "How many orders are refunded?")[0] for _ in range(20)]
    r["warm_ask_ms"] = round(statistics.median(warm), 2)
    rnd = random.Random(size)
    cid = rnd.randint(1, size)
    name, city, code = con.execute("SELECT name, city, city_code FROM customers WHERE id = ?",
                                   (cid,)).fetchone()
    status = rnd.choice(STATUSES)
    r["hinted"] = {}
    for kind, question, value in [
            ("city", "How many customers live in %s?" % city.lower(), city),
            ("status", "How many orders are %s?" % status, status),
            ("name", "What did %s order last year?" % name.upper(), name),
            ("city_code", "Which customers have the city code %s?" % code, code)]:
        ask(con, question)
        r["hinted"][kind] = hinted(llm, value)
    con.executemany("INSERT INTO customers(name, email, city, city_code) VALUES (?, ?, ?, ?)",
                    [("Newcomer%04d Smith" % i, "new%d@example.com" % i, city, code) for i in range(1000)])
    con.commit()
    r["after_insert_ask_ms"] = round(ask(con, "What did Newcomer0999 Smith order?")[0], 2)
    r["after_insert_hinted"] = hinted(llm, "Newcomer0999 Smith")
    con.close()
    r["index_mb_after_insert"] = round(folder_bytes(cache) / 1e6, 1)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--keep", help="generate the databases here and keep them")
    args = ap.parse_args()
    os.environ["QP_BUILD_DIR"] = os.path.abspath(args.build)
    import harness  # noqa: E402 (needs QP_BUILD_DIR)
    tmp = args.keep or tempfile.mkdtemp(prefix="qp-bench-value-index-", dir="/tmp")
    os.makedirs(tmp, exist_ok=True)
    llm = harness.ScriptedLLM({"default": "```sql\nSELECT name FROM customers WHERE id = 1;\n```"})
    results = []
    try:
        for size in [int(s) for s in args.sizes.split(",")]:
            db = os.path.join(tmp, "shop_%d.db" % size)
            if not os.path.exists(db):
                t0 = time.time()
                make_db(db, size)
                print("generated %d customers, %d orders in %.1f s" % (size, 2 * size, time.time() - t0),
                      flush=True)
            r = measure(size, db, tmp, harness.EXTENSION, llm)
            results.append(r)
            print(json.dumps(r), flush=True)
            if not args.keep:
                os.remove(db)
        cols = ["rows", "db_mb", "index_mb", "index_to_db", "build_s", "first_ask_ms", "warm_ask_ms",
                "after_insert_ask_ms", "after_insert_hinted"]
        print("| " + " | ".join(cols) + " | hinted |")
        print("|" + "---|" * (len(cols) + 1))
        for r in results:
            print("| " + " | ".join(str(r.get(c, "")) for c in cols) + " | " +
                  ", ".join("%s %s" % (k, "yes" if v else "no") for k, v in r["hinted"].items()) + " |")
    finally:
        llm.close()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
