#!/usr/bin/env python3
"""What reading the record tables costs as a connection's runs grow.

One connection asks the scripted model on 127.0.0.1 (which answers at once)
10, then 100, then 1,000 questions (a connection shows at most its 1,000
newest runs); after each stage it times, median of 20, the queries a user or
a program makes to look at a run:

  the newest run          SELECT llm_ms FROM agent_runs ORDER BY id DESC LIMIT 1
  one run by its id       SELECT llm_ms FROM agent_runs WHERE id = ?
  one run's attempts      SELECT count(*) FROM agent_attempts WHERE run_id = ?
  every run, one column   SELECT sum(llm_ms) FROM agent_runs

Usage: bench/records.py [--runs 10,100,1000] [--build DIR]
"""
import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import connect  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

QUERIES = [
    ("the newest run", "SELECT llm_ms FROM agent_runs ORDER BY id DESC LIMIT 1", False),
    ("one run by its id", "SELECT llm_ms FROM agent_runs WHERE id = ?", True),
    ("one run's attempts", "SELECT count(*) FROM agent_attempts WHERE run_id = ?", True),
    ("every run, one column", "SELECT sum(llm_ms) FROM agent_runs", False),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", default="10,100,1000")
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    args = ap.parse_args()
    os.environ["QP_BUILD_DIR"] = os.path.abspath(args.build)
    import harness  # noqa: E402 (needs QP_BUILD_DIR)

    tmp = tempfile.mkdtemp(prefix="qp-bench-")
    llm = harness.ScriptedLLM({"default": "```sql\nSELECT count(*) FROM t;\n```"})
    try:
        db = os.path.join(tmp, "records.db")
        with sqlite3.connect(db) as con:
            con.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)")
            con.execute("INSERT INTO t(v) VALUES ('a'), ('b')")
        con = connect(harness.EXTENSION, db, llm.base)
        # The runs in this connection's memory only: the bench measures the
        # tables, not a history file (ids would still come from one).
        con.execute("SELECT agent_config('history_file', '')")
        print("record tables: median ms of 20 reads, by the runs the connection shows")
        print("%6s  %-24s  %10s" % ("runs", "query", "ms"))
        asked = 0
        for target in [int(n) for n in args.runs.split(",")]:
            while asked < target:
                con.execute("SELECT row FROM ask('How many rows are there?')").fetchall()
                asked += 1
            shown = con.execute("SELECT count(*) FROM agent_runs").fetchone()[0]
            last = con.execute("SELECT max(id) FROM agent_runs").fetchone()[0]
            for name, sql, keyed in QUERIES:
                times = []
                for _ in range(20):
                    t0 = time.perf_counter()
                    con.execute(sql, (last,) if keyed else ()).fetchall()
                    times.append((time.perf_counter() - t0) * 1000.0)
                print("%6d  %-24s  %10.3f" % (shown, name, statistics.median(times)))
        con.close()
    finally:
        llm.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
