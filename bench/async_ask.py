#!/usr/bin/env python3
"""The asynchronous ask against the synchronous one, with a model that takes
D ms (the scripted model on 127.0.0.1, delay_ms): how long the asking
statement holds its connection, and how long a write from another connection
to the same file (BEGIN IMMEDIATE, an INSERT, COMMIT; busy_timeout 30 s) takes
while the model answers.

  sync:  SELECT row FROM ask('q') on one thread, the write on another
  async: SELECT ask_start('q'), the write, then SELECT * FROM ask_result(id, 60000)

Prints the medians of R rounds. Usage: bench/async_ask.py [--delay-ms 2000] [--rounds 3]
(QP_BUILD_DIR: the build with querypilot.so and querypilot-scripted-llm)."""
import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import ScriptedLLM, connect, make_shop_db, sql_reply  # noqa: E402


def write(db):
    con = sqlite3.connect(db, timeout=30, isolation_level=None)
    start = time.perf_counter()
    con.execute("BEGIN IMMEDIATE")
    con.execute("INSERT INTO notes VALUES ('x')")
    con.execute("COMMIT")
    elapsed = time.perf_counter() - start
    con.close()
    return elapsed * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--delay-ms", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="qp-bench-async-")
    db = make_shop_db(tmp)
    c = sqlite3.connect(db)
    c.execute("CREATE TABLE notes(body TEXT)")
    c.commit()
    c.close()
    llm = ScriptedLLM({"rules": [{"match": "", "replies": [
        {"content": sql_reply("SELECT count(*) AS n FROM customers"), "delay_ms": args.delay_ms}]}]})
    env = llm.env(QUERYPILOT_ANSWER_CACHE="0")
    results = {"sync: ask() statement": [], "sync: a write meanwhile": [],
               "async: ask_start() statement": [], "async: a write meanwhile": [],
               "async: ask_result(id, 60000) statement": []}
    try:
        for _ in range(args.rounds):
            con = connect(db, env, check_same_thread=False)
            start = time.perf_counter()
            t = threading.Thread(target=lambda: con.execute("SELECT row FROM ask('How many customers?')").fetchall())
            t.start()
            time.sleep(args.delay_ms / 4000)
            results["sync: a write meanwhile"].append(write(db))
            t.join()
            results["sync: ask() statement"].append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            run_id = con.execute("SELECT ask_start('How many customers?')").fetchone()[0]
            results["async: ask_start() statement"].append((time.perf_counter() - start) * 1000)
            time.sleep(args.delay_ms / 4000)
            results["async: a write meanwhile"].append(write(db))
            start = time.perf_counter()
            con.execute("SELECT * FROM ask_result(?, 60000)", (run_id,)).fetchall()
            results["async: ask_result(id, 60000) statement"].append((time.perf_counter() - start) * 1000)
            con.close()
    finally:
        llm.close()
    print("model delay %d ms, %d rounds, medians:" % (args.delay_ms, args.rounds))
    for name, values in results.items():
        print("  %-42s %9.1f ms" % (name, statistics.median(values)))


if __name__ == "__main__":
    main()
