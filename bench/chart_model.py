#!/usr/bin/env python3
"""What checking a model's chart costs (chart_model): `agent_chart(id)` on an
answer whose shape gives no chart, so that the model (the scripted model on
127.0.0.1, answering at once) proposes one, which is checked against
Vega-Lite's own schema (npm's vega-lite, build/vega-lite-schema.json) before
it is returned.

One connection, one ask, then N calls of agent_chart(1), each timed as the
client sees it; the first call is reported apart (it reads and parses the
1.9 MB schema; later calls find it parsed until the file changes). Prints the
first call's time and the median, p95 and slowest of the others.

Usage: bench/chart_model.py [--runs N] [--build DIR] [--vega DIR]
  --vega: the node_modules folder holding vega-lite (default: where the chart
  tests install it, tests/e2e/harness.py, installing it there if missing).
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import connect, pct  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

QUESTION = "Show each product's price"
SQL = "SELECT name, category, price FROM products"
PROPOSED = {"mark": "point",
            "encoding": {"x": {"field": "category", "type": "nominal"},
                         "y": {"field": "price", "type": "quantitative"},
                         "tooltip": {"field": "name", "type": "nominal"}}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--vega", default="")
    args = ap.parse_args()
    os.environ["QP_BUILD_DIR"] = os.path.abspath(args.build)
    import harness  # noqa: E402 (needs QP_BUILD_DIR)

    vega = args.vega or harness.install_chart_clients()
    schema = os.path.join(vega, "vega-lite", "build", "vega-lite-schema.json")
    if not os.path.isfile(schema):
        sys.exit("no %s: npm install vega-lite@5 there, or name another folder with --vega" % schema)
    tmp = tempfile.mkdtemp(prefix="qp-bench-chart-")
    llm = harness.ScriptedLLM({"rules": [
        {"match": "First rows:", "replies": ["```json\n%s\n```" % json.dumps(PROPOSED)]},
        {"match": QUESTION, "replies": [harness.sql_reply(SQL)]}]})
    try:
        db = harness.make_shop_db(tmp)
        con = connect(harness.EXTENSION, db, llm.base)
        for k, v in (("chart_model", "1"), ("chart_scripts", vega)):
            con.execute("SELECT agent_config(?, ?)", (k, v))
        con.execute("SELECT row FROM ask(?)", (QUESTION,)).fetchall()
        times = []
        for _ in range(args.runs + 1):
            t0 = time.perf_counter()
            spec = json.loads(con.execute("SELECT agent_chart(1)").fetchone()[0])
            times.append((time.perf_counter() - t0) * 1000.0)
            assert spec["mark"] == "point", spec
        con.close()
        first, rest = times[0], times[1:]
        print("agent_chart(1) with chart_model, the model's chart checked against %s (%d bytes)"
              % (schema, os.path.getsize(schema)))
        print("first call %.1f ms; the next %d: median %.1f ms, p95 %.1f ms, slowest %.1f ms"
              % (first, len(rest), statistics.median(rest), pct(rest, 95), max(rest)))
        print(json.dumps({"first_ms": first, "runs": len(rest), "median_ms": statistics.median(rest),
                          "p95_ms": pct(rest, 95), "max_ms": max(rest)}))
    finally:
        llm.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
