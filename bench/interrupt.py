#!/usr/bin/env python3
"""Interrupt latency: how long after sqlite3_interrupt() an ask() returns.

Two cases, each N times on one connection (Python's Connection.interrupt()
from a timer thread, as Ctrl-C in the shell calls sqlite3_interrupt):
- model: the scripted model on 127.0.0.1 holds its reply for 10 s;
- sql: the model's SQL is a recursive CTE that never ends.
The timer fires 200 ms after the ask starts. Prints median, p95 and max of the
time from the interrupt to ask() raising "interrupted".

Usage: bench/interrupt.py [--runs 20] [--build DIR]
"""
import argparse
import os
import sqlite3
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import connect, pct  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

FOREVER = "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT MAX(i) FROM c"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--build", default=None)
    args = ap.parse_args()
    if args.build:
        os.environ["QP_BUILD_DIR"] = os.path.abspath(args.build)
    import harness
    llm = harness.ScriptedLLM()
    try:
        tmp = tempfile.mkdtemp(prefix="qp-bench-")
        db = harness.make_shop_db(tmp)
        llm.load({"rules": [
            {"match": "slow model", "replies": [{"content": "SELECT 1", "delay_ms": 10000}]},
            {"match": "endless sql", "replies": [FOREVER]},
        ]})
        con = connect(harness.EXTENSION, db, llm.base)
        con.execute("SELECT agent_config('sql_timeout_ms', 60000)")
        print("%-6s %5s %10s %10s %10s" % ("case", "runs", "median ms", "p95 ms", "max ms"))
        for case, question in (("model", "slow model %d"), ("sql", "endless sql %d")):
            latencies = []
            for i in range(args.runs):
                fired = {}

                def interrupt():
                    fired["at"] = time.perf_counter()
                    con.interrupt()
                timer = threading.Timer(0.2, interrupt)
                timer.start()
                try:
                    con.execute("SELECT * FROM ask(?)", (question % i,)).fetchall()
                    raise SystemExit("ask() was not interrupted")
                except sqlite3.OperationalError as e:
                    if "interrupted" not in str(e):
                        raise SystemExit("unexpected error: %s" % e)
                returned = time.perf_counter()
                timer.join()
                latencies.append(1000 * (returned - fired["at"]))
            latencies.sort()
            print("%-6s %5d %10.1f %10.1f %10.1f" % (case, len(latencies), latencies[len(latencies) // 2],
                                                     pct(latencies, 95), latencies[-1]))
        con.close()
    finally:
        llm.close()


if __name__ == "__main__":
    main()
