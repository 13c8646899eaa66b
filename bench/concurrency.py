#!/usr/bin/env python3
"""Concurrency: connections in threads asking at once against a slow model.

Each thread opens its own connection to the same shop database (as separate
clients would), loads QueryPilot, and asks Q questions; the scripted model on
127.0.0.1 answers every request after a fixed delay (200 ms by default, a
fast hosted model). If no lock is held across an HTTP call, throughput grows
with the threads until the model's latency, not QueryPilot, is the limit.
Python's sqlite3 module releases the GIL inside sqlite3_step, so the threads
really run ask() at the same time.

Each connection asks once before the clock starts (opening its keep-alive
HTTP connection). Prints, for 1, 2, 4 and 8 threads: asks completed, wall
time, throughput (asks per second), speed-up over one thread, and per-ask
latency median/p95/max.

Usage: bench/concurrency.py [--threads 1,2,4,8] [--asks 10] [--delay-ms 200] [--build DIR]
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import connect, pct  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

QUESTION = "How many orders came from Canada?"
SQL = ("SELECT count(*) AS orders FROM orders o JOIN customers c ON c.id = o.customer_id "
       "WHERE c.country = 'Canada'")


def worker(harness, db, base, asks, barrier, latencies, errors):
    try:
        con = connect(harness.EXTENSION, db, base)
        # One ask before the clock starts opens this connection's keep-alive
        # HTTP connection: the scripted server's listen backlog is small (5),
        # and 8 simultaneous connects can make the kernel drop a SYN, which
        # the client retries after 1 s, a cost of the test server, not of ask().
        con.execute("SELECT row FROM ask(?)", (QUESTION,)).fetchall()
        barrier.wait()
        for _ in range(asks):
            t0 = time.perf_counter()
            rows = con.execute("SELECT row FROM ask(?)", (QUESTION,)).fetchall()
            latencies.append((time.perf_counter() - t0) * 1000.0)
            if rows != [('{"orders":18}',)]:
                errors.append("unexpected rows %r" % (rows,))
        con.close()
    except Exception as e:  # reported by the main thread
        errors.append(repr(e))
        barrier.abort()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1,2,4,8")
    ap.add_argument("--asks", type=int, default=10, help="asks per thread")
    ap.add_argument("--delay-ms", type=int, default=200)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    args = ap.parse_args()
    os.environ["QP_BUILD_DIR"] = os.path.abspath(args.build)
    import harness  # noqa: E402 (needs QP_BUILD_DIR)

    tmp = tempfile.mkdtemp(prefix="qp-conc-")
    llm = harness.ScriptedLLM({"default": {"content": "```sql\n%s;\n```" % SQL, "delay_ms": args.delay_ms}})
    results = []
    try:
        db = harness.make_shop_db(tmp)
        print("ask() from N threads, one connection each, model latency %d ms, %d asks per thread"
              % (args.delay_ms, args.asks))
        print("%7s  %5s  %8s  %10s  %8s  %22s" % ("threads", "asks", "wall s", "asks/s", "speed-up",
                                                 "latency ms p50/p95/max"))
        base_rate = None
        for n in [int(t) for t in args.threads.split(",")]:
            latencies, errors = [], []
            barrier = threading.Barrier(n + 1)
            threads = [threading.Thread(target=worker, args=(harness, db, llm.base, args.asks, barrier,
                                                             latencies, errors)) for _ in range(n)]
            for t in threads:
                t.start()
            barrier.wait()  # every connection is open and configured
            t0 = time.perf_counter()
            for t in threads:
                t.join()
            wall = time.perf_counter() - t0
            if errors:
                raise SystemExit("errors: %s" % errors[:3])
            rate = len(latencies) / wall
            base_rate = base_rate or rate
            r = {"threads": n, "asks": len(latencies), "wall_s": wall, "asks_per_s": rate,
                 "speedup": rate / base_rate, "latency_ms_p50": statistics.median(latencies),
                 "latency_ms_p95": pct(latencies, 95), "latency_ms_max": max(latencies)}
            results.append(r)
            print("%7d  %5d  %8.2f  %10.2f  %7.2fx  %10.1f/%.1f/%.1f" % (
                n, r["asks"], wall, rate, r["speedup"], r["latency_ms_p50"], r["latency_ms_p95"],
                r["latency_ms_max"]))
            llm.load({"default": {"content": "```sql\n%s;\n```" % SQL, "delay_ms": args.delay_ms}})
        print(json.dumps(results))
    finally:
        llm.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
