#!/usr/bin/env python3
"""Contention: a writer process beside asks, on a file in rollback-journal mode.

In rollback-journal mode (SQLite's default) a reader's SHARED lock stops a
writer from committing: the writer gets SQLITE_BUSY, at once with a busy
timeout of 0, or after waiting out its timeout. This measures what asking
does to another process that writes the same file, against plain SELECTs at
the same pace.

A writer process inserts one row per transaction (BEGIN IMMEDIATE, INSERT,
COMMIT), then sleeps 1 ms, for --seconds, with its busy timeout (0 and
5000 ms). Beside it, one reader process:

  none      nothing (the writer alone);
  select    the answer's SQL run plainly, one query per --pace-ms;
  ask       SELECT row FROM ask(...) against the scripted model on 127.0.0.1
            answering after --delay-ms (a hosted model's latency), one ask
            per --pace-ms (or back to back when an ask takes longer);
  select@ask  the plain SQL at the pace the asks actually reached.

Each reader waits a random 0.5 to 1.5 paces between statements, so that none
keeps in step with the writer's sleeps. With two CPUs or more, the writer
runs on one and the reader (with the scripted model) on another: left to the
scheduler, whether the two share a CPU changed the rate beside identical
SELECTs from 0.05 to 0.13 between runs, more than any reader differed.

For each it prints the writer's attempts, commits, SQLITE_BUSY count and rate
(busy / attempts), and its longest wait for a commit; and the reader's
statements per second. With build/bench/locktrace.so (bench/locktrace.c,
preloaded into both processes) it also prints, per reader statement, how many
SHARED windows the reader took on the file and how long it held the file in
all, and how many of the writer's attempts at the EXCLUSIVE lock a commit
needs were refused inside those windows (with busy timeout 0, each is one
SQLITE_BUSY; with a timeout, one retry of its wait). The database: a shop of
50,000 customers and 100,000 orders, generated once.

--rounds repeats all readers in turn and prints the median per reader.

Usage: bench/contention.py [--seconds 5] [--delay-ms 0,200] [--pace-ms 50] [--rounds 1] [--build DIR]
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

SQL = "SELECT count(*) AS n FROM orders WHERE status = 'refunded'"

WRITER = r"""
import json, sqlite3, sys, time
db, timeout_ms, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
con = sqlite3.connect(db, timeout=timeout_ms / 1000.0, isolation_level=None)
attempts = commits = busy = 0
longest = 0.0
end = time.perf_counter() + seconds
while time.perf_counter() < end:
    attempts += 1
    t0 = time.perf_counter()
    try:
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT INTO notes(body) VALUES ('written beside the reader')")
        con.execute("COMMIT")
        commits += 1
        longest = max(longest, time.perf_counter() - t0)
    except sqlite3.OperationalError as e:
        if "locked" not in str(e) and "busy" not in str(e):
            raise
        busy += 1
        if con.in_transaction:
            con.execute("ROLLBACK")
    time.sleep(0.001)
print(json.dumps({"attempts": attempts, "commits": commits, "busy": busy, "longest_commit_ms": longest * 1000}))
"""

READER = r"""
import json, random, sys, time
sys.path.insert(0, %(here)r)
from benchlib import connect
import sqlite3
mode, db, base, seconds, pace = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5]) / 1000
if mode == "ask":
    con = connect(%(ext)r, db, base)
    con.execute("SELECT agent_config('value_index_ask_ms', 0)")
    stmt, n = "SELECT row FROM ask('How many orders were refunded?')", 0
    con.execute(stmt).fetchall()  # the first ask: schema and value index read before the clock
else:
    con = sqlite3.connect(db)
    stmt, n = %(sql)r, 0
print("ready", flush=True)
sys.stdin.readline()
# Each statement starts a random 0.5 to 1.5 paces after the last (a mean of one
# pace): a reader in step with the writer's own sleeps would meet its commits
# by chance more or less often than another reader at the same pace.
jitter = random.Random()
end = time.perf_counter() + seconds
while time.perf_counter() < end:
    t0 = time.perf_counter()
    con.execute(stmt).fetchall()
    n += 1
    left = pace * jitter.uniform(0.5, 1.5) - (time.perf_counter() - t0)
    if left > 0:
        time.sleep(left)
print(json.dumps({"statements": n}))
"""


def make_db(path):
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT, country TEXT);
        CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id),
                            status TEXT, amount REAL);
        CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT);
        WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 50000)
        INSERT INTO customers SELECT i, 'Customer ' || i, CASE i % 3 WHEN 0 THEN 'Canada' WHEN 1 THEN 'France'
            ELSE 'Japan' END FROM k;
        WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 100000)
        INSERT INTO orders SELECT i, i % 50000 + 1, CASE i % 4 WHEN 0 THEN 'paid' WHEN 1 THEN 'shipped'
            WHEN 2 THEN 'refunded' ELSE 'pending' END, (i % 97) * 1.5 FROM k;
    """)
    con.commit()
    con.close()


SHARED_RANGE = 0x40000002  # where SQLite's unix VFS takes SHARED and EXCLUSIVE locks
F_RDLCK, F_WRLCK, F_UNLCK = 0, 1, 2


def lock_events(prefix):
    """(ns, fd, type, start, len, result) of each lock locktrace.so saw, by time."""
    events = []
    for name in glob.glob(prefix + ".*"):
        with open(name) as f:
            for line in f:
                if line.startswith("dropped"):
                    sys.exit("contention.py: locktrace's buffer overflowed; use fewer --seconds")
                events.append(tuple(int(x) for x in line.split()))
        os.remove(name)
    return sorted(events)


def lock_figures(reader_prefix, writer_prefix):
    """The reader's SHARED windows on the file while the writer ran (one per
    read transaction of any of its connections) and the writer's refused
    EXCLUSIVE locks (at commit) inside them."""
    writer = lock_events(writer_prefix)
    reader = lock_events(reader_prefix)
    if not writer:
        return None
    began = writer[0][0]
    held, windows = {}, []
    for ns, fd, kind, start, length, result in reader:
        if kind == F_RDLCK and start == SHARED_RANGE and result == 0:
            held[fd] = ns
        elif kind == F_UNLCK and fd in held and start in (0, SHARED_RANGE):
            opened = held.pop(fd)
            if ns >= began:
                windows.append((max(opened, began), ns))
    failed = [ns for ns, fd, kind, start, length, result in writer
              if kind == F_WRLCK and start == SHARED_RANGE and result != 0]
    inside = sum(1 for ns in failed if any(a <= ns <= b for a, b in windows))
    return {"windows": len(windows), "held_ms": sum(b - a for a, b in windows) / 1e6, "refused_inside": inside}


def pin(cpu):
    """A preexec_fn running the child on `cpu` alone, or None."""
    return None if cpu is None else (lambda: os.sched_setaffinity(0, {cpu}))


def run_pair(db, reader_mode, timeout_ms, args, llm, pace_ms, reader_code, writer_cpu, tracer, tmp):
    """One run of the writer beside `reader_mode`. The reader runs on this
    process's CPUs; the writer on `writer_cpu` when given."""
    reader = None
    reader_env, writer_env = dict(os.environ), dict(os.environ)
    if tracer:
        reader_env.update(LD_PRELOAD=tracer, QP_LOCKTRACE=os.path.join(tmp, "locks-reader"))
        writer_env.update(LD_PRELOAD=tracer, QP_LOCKTRACE=os.path.join(tmp, "locks-writer"))
    if reader_mode != "none":
        reader = subprocess.Popen([sys.executable, "-c", reader_code, reader_mode, db, llm.base,
                                   str(args.seconds), str(pace_ms)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=reader_env)
        assert reader.stdout.readline().strip() == "ready"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, db, str(timeout_ms), str(args.seconds)],
                              stdout=subprocess.PIPE, text=True, env=writer_env, preexec_fn=pin(writer_cpu))
    if reader:
        reader.stdin.write("go\n")
        reader.stdin.flush()
    w = json.loads(writer.communicate()[0])
    r = json.loads(reader.communicate()[0]) if reader else {"statements": 0}
    w["busy_rate"] = w["busy"] / float(max(1, w["attempts"]))
    w["reader_per_s"] = r["statements"] / args.seconds
    w["statements"] = r["statements"]
    w["locks"] = lock_figures(os.path.join(tmp, "locks-reader"), os.path.join(tmp, "locks-writer")) \
        if tracer else None
    return w


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--delay-ms", default="0,200")
    ap.add_argument("--pace-ms", type=float, default=50)
    ap.add_argument("--timeouts", default="0,5000")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    args = ap.parse_args()
    os.environ["QP_BUILD_DIR"] = os.path.abspath(args.build)
    import harness  # noqa: E402 (needs QP_BUILD_DIR)
    # The writer on one CPU, the reader (and the scripted model, started from
    # here) on another: left to the scheduler, which of them shares a CPU
    # changes from run to run and moves the busy rate more than the readers do.
    cpus = sorted(os.sched_getaffinity(0))
    cpus = (cpus[0], cpus[1]) if len(cpus) >= 2 else (None, None)
    if cpus[1] is not None:
        os.sched_setaffinity(0, {cpus[1]})
    tracer = os.path.join(os.path.abspath(args.build), "bench", "locktrace.so")
    tracer = tracer if os.path.exists(tracer) else None
    tmp = tempfile.mkdtemp(prefix="qp-contention-")
    reader_code = READER % {"here": HERE, "ext": harness.EXTENSION, "sql": SQL}
    try:
        base = os.path.join(tmp, "base.db")
        make_db(base)
        print("writer beside a reader, rollback-journal mode, %.0f s each; pace %.0f ms; %s" %
              (args.seconds, args.pace_ms, "writer on CPU %d, reader on CPU %d" % cpus if cpus[0] is not None
               else "one CPU: nothing pinned"))
        if not tracer:
            print("(no %s: lock windows not shown; build the tree first)" % os.path.join("bench", "locktrace.so"))
        print("%-10s %8s %10s %9s %8s %8s %10s %12s %10s %9s %9s %9s" % (
            "reader", "model ms", "timeout ms", "attempts", "commits", "busy", "busy rate", "longest ms",
            "reader/s", "windows", "held ms", "refused"))
        rates = {}  # (reader, model ms, timeout ms) -> busy rates, one per round
        held = {}   # the same -> ms the reader held the file per statement, one per round
        for _ in range(args.rounds):
            for delay in [int(d) for d in args.delay_ms.split(",")]:
                llm = harness.ScriptedLLM({"rules": [{"match": "", "replies": [
                    {"content": harness.sql_reply(SQL), "delay_ms": delay}]}]})
                try:
                    for timeout_ms in [int(t) for t in args.timeouts.split(",")]:
                        asks_per_s = None
                        for mode in ("none", "select", "ask", "select@ask"):
                            if mode in ("none", "select") and delay != int(args.delay_ms.split(",")[0]):
                                continue  # the model's latency changes nothing for them
                            db = os.path.join(tmp, "run.db")
                            shutil.copyfile(base, db)
                            pace = args.pace_ms
                            reader_mode = mode
                            if mode == "select@ask":
                                reader_mode = "select"
                                pace = 1000.0 / asks_per_s if asks_per_s else args.pace_ms
                            w = run_pair(db, reader_mode, timeout_ms, args, llm, pace, reader_code, cpus[0],
                                         tracer, tmp)
                            if mode == "ask":
                                asks_per_s = w["reader_per_s"]
                            shown_delay = delay if mode in ("ask", "select@ask") else "-"
                            key = (mode, shown_delay, timeout_ms)
                            rates.setdefault(key, []).append(w["busy_rate"])
                            locks = ("%9s %9s %9s" % ("-", "-", "-"))
                            if w["locks"] and w["statements"]:
                                n = float(w["statements"])
                                held.setdefault(key, []).append(w["locks"]["held_ms"] / n)
                                locks = "%9.2f %9.3f %9d" % (w["locks"]["windows"] / n, w["locks"]["held_ms"] / n,
                                                            w["locks"]["refused_inside"])
                            print("%-10s %8s %10d %9d %8d %8d %10.3f %12.1f %10.1f %s" % (
                                mode, shown_delay, timeout_ms,
                                w["attempts"], w["commits"], w["busy"], w["busy_rate"], w["longest_commit_ms"],
                                w["reader_per_s"], locks), flush=True)
                finally:
                    llm.close()
        if args.rounds > 1:
            print("median over %d rounds: busy rate (each round's), ms the file was held per statement" %
                  args.rounds)
            for key, r in rates.items():
                mode, shown_delay, timeout_ms = key
                print("%-10s %8s %10d %10.3f   (%s)   %s" % (
                    mode, shown_delay, timeout_ms, statistics.median(r), " ".join("%.3f" % x for x in r),
                    "%.3f" % statistics.median(held[key]) if key in held else "-"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
