#!/usr/bin/env python3
"""Result streaming: ask() returning a million rows against the same SQL run
plainly, both in the sqlite3 shell, with wall time and peak memory.

Builds a table of N rows (id, name, amount), then runs in separate sqlite3
shell processes, output to /dev/null:

  plain:   SELECT id, name, amount FROM big;
  ask():   .load querypilot; SELECT row FROM ask('...');  (the scripted model on
           127.0.0.1 answers with that same SQL; max_rows 0, i.e. no cap;
           sql_timeout_ms raised, as the budget counts time spent in SQLite)
  json:    SELECT json_object('id', id, 'name', name, 'amount', amount) FROM big;
           (what ask() prints per row, done by SQLite itself, to separate the
           cost of JSON rows from the cost of the agent)
  table:   .load querypilot; CREATE VIRTUAL TABLE temp.t USING ask('...');
           SELECT * FROM t;  (an answer table: the answer's own columns, values
           handed from SQLite to SQLite; the same settings as ask())
  vtab:    .load bench/passthrough; CREATE VIRTUAL TABLE temp.p USING
           passthrough('...'); SELECT * FROM p;  (the least any virtual table
           costs to hand over another statement's rows: no checks, no limits, no
           agent; the yardstick for answer tables, whose ratio to it is printed)
  ask() first: ask() with no value index built, so that the ask reads the file
           for its value index first (what a connection's first asks pay on a
           big rollback-journal file, value_index_ask_ms)

ask() and table use a value index built once before the rounds with
SELECT agent_index() into a value_index_file, as docs/usage.md advises for big
files; each round's shell loads it from that file.

They run in R rounds (each query in turn, so that the machine's noise falls on
all alike); the median wall time, the median of the per-round ratios to plain,
and the peak resident memory (GNU time's %M) are printed for two row counts, so
that memory can be seen not to grow with the number of rows.

Usage: bench/streaming.py [--rows 100000,1000000] [--repeat 5] [--build DIR]
"""
import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

SQL = "SELECT id, name, amount FROM big"
TIME = "/usr/bin/time"  # GNU time (Debian package "time")


def make_db(path, rows):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE big (id INTEGER PRIMARY KEY, name TEXT NOT NULL, amount REAL NOT NULL)")
    con.executemany("INSERT INTO big VALUES (?, ?, ?)",
                    ((i, "customer %d" % i, (i * 37 % 10000) / 100.0) for i in range(1, rows + 1)))
    con.commit()
    con.close()


def measure_once(shell, db, script, env):
    """Wall seconds and peak resident MiB of the shell running `script`.

    Peak memory comes from GNU time (%M): the shell's own, measured from a
    small parent (a child forked from Python would count Python's pages).
    """
    with tempfile.NamedTemporaryFile("w+", suffix=".time") as tf, open(os.devnull, "w") as null:
        t0 = time.perf_counter()
        proc = subprocess.run([TIME, "-f", "%M", "-o", tf.name, shell, "-batch", db], input=script,
                              stdout=null, stderr=subprocess.PIPE, env=env, text=True)
        elapsed = time.perf_counter() - t0
        if proc.returncode != 0 or proc.stderr.strip():
            raise RuntimeError("sqlite3 failed (%d): %s" % (proc.returncode, proc.stderr))
        return elapsed, int(tf.read().strip().splitlines()[-1]) / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="100000,1000000")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    args = ap.parse_args()
    os.environ["QP_BUILD_DIR"] = os.path.abspath(args.build)
    import harness  # noqa: E402 (needs QP_BUILD_DIR)
    passthrough = os.path.join(os.path.abspath(args.build), "bench", "passthrough")
    if not os.path.exists(passthrough + ".so"):
        sys.exit("streaming.py: %s.so is missing; build the tree first (cmake --build build)" % passthrough)

    tmp = tempfile.mkdtemp(prefix="qp-stream-")
    llm = harness.ScriptedLLM({"default": "```sql\n%s;\n```" % SQL})
    env = llm.env()
    results = []
    try:
        print("streaming through ask() vs the same SQL in the sqlite3 shell (output to /dev/null), "
              "%d interleaved rounds" % args.repeat)
        print("%9s  %-11s  %9s  %9s  %12s" % ("rows", "query", "seconds", "x plain", "peak RSS MiB"))
        for rows in [int(r) for r in args.rows.split(",")]:
            db = os.path.join(tmp, "big%d.db" % rows)
            make_db(db, rows)
            index_file = os.path.join(tmp, "values%d.db" % rows)
            first_settings = (".load %s\nSELECT agent_config('max_rows', '0');\n"
                              "SELECT agent_config('sql_timeout_ms', '600000');\n" % harness.EXTENSION)
            settings = first_settings + "SELECT agent_config('value_index_file', '%s');\n" % index_file
            t0 = time.perf_counter()
            measure_once(harness.SQLITE3, db, settings + "SELECT agent_index();\n", env)
            print("%9d  value index built once with agent_index() in %.1f s" % (rows, time.perf_counter() - t0))
            scripts = {
                "plain": SQL + ";\n",
                "json": "SELECT json_object('id', id, 'name', name, 'amount', amount) FROM big;\n",
                "ask()": (settings + "SELECT row FROM ask('List every row of big');\n"),
                "table": (settings + "CREATE VIRTUAL TABLE temp.t USING ask('List every row of big');\n"
                          "SELECT * FROM t;\n"),
                "vtab": (".load %s\nCREATE VIRTUAL TABLE temp.p USING passthrough('%s');\n"
                         "SELECT * FROM p;\n" % (passthrough, SQL)),
                "ask() first": (first_settings + "SELECT row FROM ask('List every row of big');\n"),
            }
            # Rounds of plain, json, ask() in turn, so that the machine's
            # noise falls on all three alike; ratios are taken per round.
            times = {name: [] for name in scripts}
            peaks = {name: 0.0 for name in scripts}
            for _ in range(args.repeat):
                for name, script in scripts.items():
                    secs, peak = measure_once(harness.SQLITE3, db, script, env)
                    times[name].append(secs)
                    peaks[name] = max(peaks[name], peak)
            for name in scripts:
                ratio = statistics.median(t / p for t, p in zip(times[name], times["plain"]))
                secs = statistics.median(times[name])
                results.append({"rows": rows, "query": name, "seconds_median": secs,
                                "ratio_to_plain_median": ratio, "peak_rss_mib": peaks[name]})
                print("%9d  %-11s  %9.3f  %9.2f  %12.1f" % (rows, name, secs, ratio, peaks[name]))
            vs_vtab = statistics.median(t / v for t, v in zip(times["table"], times["vtab"]))
            results.append({"rows": rows, "query": "table", "ratio_to_vtab_median": vs_vtab})
            print("%9d  table / vtab: %.2f (median of per-round ratios)" % (rows, vs_vtab))
        print(json.dumps(results))
    finally:
        llm.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
