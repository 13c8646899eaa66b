#!/usr/bin/env python3
"""Overhead of one ask() beyond the model's own time.

Runs N asks of the shop database against the scripted model on 127.0.0.1
(which answers at once), through Python's sqlite3 module, and reports for each
ask: the wall time of the whole `SELECT * FROM ask(...)` as the client sees
it, the time inside the model call (agent_runs.llm_ms: HTTP on loopback plus
the scripted server), and their difference, QueryPilot's own overhead (schema
cache check, prompt, extraction, critic, execution, JSON rows, history).

Usage: bench/overhead.py [--runs N] [--build DIR]
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
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    args = ap.parse_args()
    os.environ["QP_BUILD_DIR"] = os.path.abspath(args.build)
    import harness  # noqa: E402 (needs QP_BUILD_DIR)

    tmp = tempfile.mkdtemp(prefix="qp-bench-")
    llm = harness.ScriptedLLM({"rules": [{"match": "spent the most", "replies": [
        "```sql\nSELECT c.name, ROUND(SUM(oi.quantity * oi.unit_price), 2) AS total_spent FROM customers c "
        "JOIN orders o ON o.customer_id = c.id JOIN order_items oi ON oi.order_id = o.id "
        "WHERE strftime('%Y', o.ordered_at) = '2025' AND o.status <> 'refunded' GROUP BY c.id "
        "ORDER BY total_spent DESC LIMIT 5;\n```"]}]})
    try:
        db = harness.make_shop_db(tmp)
        con = sqlite3.connect(db)
        con.enable_load_extension(True)
        con.load_extension(harness.EXTENSION)
        for k, v in (("provider", "openai"), ("base_url", llm.base + "/v1"), ("model", "scripted")):
            con.execute("SELECT agent_config(?, ?)", (k, v))
        q = "Which five customers spent the most last year?"
        con.execute("SELECT * FROM ask(?)", (q,)).fetchall()  # warm the schema cache and the connection
        wall, llm_ms = [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            rows = con.execute("SELECT row FROM ask(?)", (q,)).fetchall()
            wall.append((time.perf_counter() - t0) * 1000.0)
            assert len(rows) == 5, rows
        for (ms,) in con.execute("SELECT llm_ms FROM agent_runs WHERE id > 1 ORDER BY id"):
            llm_ms.append(ms)
        overhead = [w - l for w, l in zip(wall, llm_ms)]
        result = {
            "runs": args.runs,
            "wall_ms_median": statistics.median(wall), "wall_ms_p95": pct(wall, 95),
            "model_call_ms_median": statistics.median(llm_ms), "model_call_ms_p95": pct(llm_ms, 95),
            "overhead_ms_median": statistics.median(overhead), "overhead_ms_p95": pct(overhead, 95),
        }
        print("ask() overhead beyond the model call, %d runs, warm schema cache, 4-table shop database" % args.runs)
        print("  whole ask()       median %.3f ms   p95 %.3f ms" % (result["wall_ms_median"], result["wall_ms_p95"]))
        print("  model call (HTTP) median %.3f ms   p95 %.3f ms" % (result["model_call_ms_median"], result["model_call_ms_p95"]))
        print("  QueryPilot itself median %.3f ms   p95 %.3f ms" % (result["overhead_ms_median"], result["overhead_ms_p95"]))
        print(json.dumps(result))
        con.close()
    finally:
        llm.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
