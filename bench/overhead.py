#!/usr/bin/env python3
"""Overhead of one ask() beyond the model's own time, by schema size.

For databases of 10, 100 and 1,000 tables (each table 6 columns, a foreign
key to the previous table, 3 rows), asks one question against the scripted
model on 127.0.0.1, which answers at once, through Python's sqlite3 module:

  warm: one connection, schema cache filled by a first ask, then N asks;
  cold: a fresh connection for every ask (the extension is loaded and
        configured before the clock starts), so each ask reads the schema.

For each ask it takes the wall time of `SELECT row FROM ask(...)` as the
client sees it and the time inside the model call (agent_runs.llm_ms: HTTP on
loopback, the scripted server parsing the request, the reply); the difference
is QueryPilot's own overhead: schema, prompt, extraction, critic, execution,
JSON rows, history. Prints median and p95 of each, and the medians of two
parts of it (agent_runs.node_times): the schema's (load_schema/schema: on a
warm cache, the fingerprint and the host's rules checked again at every ask)
and linking's (load_schema/linking: the tables the prompt shows, chosen).

Usage: bench/overhead.py [--tables 10,100,1000] [--warm-runs N] [--cold-runs N] [--build DIR]
                        [--journal delete|wal]
"""
import argparse
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import connect, pct  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

QUESTION = "How many rows does table t0000 have?"


def make_db(path, tables, journal="delete"):
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode = %s" % journal)
    for i in range(tables):
        ref = "" if i == 0 else " REFERENCES t%04d(id)" % (i - 1)
        con.execute("CREATE TABLE t%04d (id INTEGER PRIMARY KEY, name TEXT NOT NULL, amount REAL, "
                    "created_at TEXT, parent_id INTEGER%s, note TEXT)" % (i, ref))
        con.executemany("INSERT INTO t%04d VALUES (?, ?, ?, ?, ?, ?)" % i,
                        [(r, "name %d" % r, r * 1.5, "2025-01-0%d" % r, r, "note") for r in (1, 2, 3)])
    con.commit()
    con.close()


def timed_ask(con):
    t0 = time.perf_counter()
    rows = con.execute("SELECT row FROM ask(?)", (QUESTION,)).fetchall()
    wall = (time.perf_counter() - t0) * 1000.0
    assert rows == [('{"count(*)":3}',)], rows
    llm_ms, times = con.execute("SELECT llm_ms, node_times FROM agent_runs ORDER BY id DESC LIMIT 1").fetchone()
    times = json.loads(times)
    return wall, llm_ms, times.get("load_schema/schema", 0.0), times.get("load_schema/linking", 0.0)


def summarise(samples):
    wall = [w for w, _, _, _ in samples]
    llm = [l for _, l, _, _ in samples]
    over = [w - l for w, l, _, _ in samples]
    schema = [s for _, _, s, _ in samples]
    linking = [k for _, _, _, k in samples]
    return {"runs": len(samples),
            "wall_ms_median": statistics.median(wall), "wall_ms_p95": pct(wall, 95),
            "model_call_ms_median": statistics.median(llm), "model_call_ms_p95": pct(llm, 95),
            "overhead_ms_median": statistics.median(over), "overhead_ms_p95": pct(over, 95),
            "schema_ms_median": statistics.median(schema),
            "linking_ms_median": statistics.median(linking)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tables", default="10,100,1000")
    ap.add_argument("--warm-runs", type=int, default=200)
    ap.add_argument("--cold-runs", type=int, default=30)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--journal", default="delete", choices=["delete", "wal"],
                    help="the databases' journal mode (wal: QueryPilot reads on the host's connection)")
    args = ap.parse_args()
    os.environ["QP_BUILD_DIR"] = os.path.abspath(args.build)
    import harness  # noqa: E402 (needs QP_BUILD_DIR)

    tmp = tempfile.mkdtemp(prefix="qp-bench-")
    llm = harness.ScriptedLLM({"default": "```sql\nSELECT count(*) FROM t0000;\n```"})
    results = []
    try:
        print("ask() overhead beyond the model call (scripted model on 127.0.0.1, answering at once)")
        print("%7s  %5s  %5s  %22s  %22s  %22s  %10s  %10s" % (
            "tables", "cache", "runs", "whole ask() ms", "model call ms", "QueryPilot itself ms",
            "schema ms", "linking ms"))
        print("%7s  %5s  %5s  %22s  %22s  %22s  %10s  %10s" % (
            "", "", "", "median      p95", "median      p95", "median      p95", "median", "median"))
        for tables in [int(t) for t in args.tables.split(",")]:
            db = os.path.join(tmp, "t%d.db" % tables)
            make_db(db, tables, args.journal)
            for cache in ("cold", "warm"):
                samples = []
                if cache == "warm":
                    con = connect(harness.EXTENSION, db, llm.base)
                    timed_ask(con)  # fills the schema cache
                    for _ in range(args.warm_runs):
                        samples.append(timed_ask(con))
                    con.close()
                else:
                    for _ in range(args.cold_runs):
                        con = connect(harness.EXTENSION, db, llm.base)
                        samples.append(timed_ask(con))
                        con.close()
                llm.load({"default": "```sql\nSELECT count(*) FROM t0000;\n```"})  # empties its log
                r = summarise(samples)
                r.update({"tables": tables, "cache": cache})
                results.append(r)
                print("%7d  %5s  %5d  %9.3f  %9.3f  %9.3f  %9.3f  %9.3f  %9.3f  %10.3f  %10.3f" % (
                    tables, cache, r["runs"], r["wall_ms_median"], r["wall_ms_p95"],
                    r["model_call_ms_median"], r["model_call_ms_p95"],
                    r["overhead_ms_median"], r["overhead_ms_p95"], r["schema_ms_median"],
                    r["linking_ms_median"]))
        print(json.dumps(results))
    finally:
        llm.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
