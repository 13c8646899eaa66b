#!/usr/bin/env python3
"""What candidate readings cost: one query per reply against three.

A table of --rows rows (default 1,000,000: id, region, product, amount) and
the question "What is the total amount per region?", answered by the
scripted model on 127.0.0.1 (at once) either with one ```sql block or with
three (the same total written two other ways), on one warm connection with
the answer cache off. Per ask it reads, from agent_runs and agent_attempts:

  first query   attempt 1's exec_ms: the first reading's SQL inside SQLite;
  candidates    node_times.candidates: the alternatives' SQL, their checks
                and the comparison (absent with one block); the alternatives
                run beside the first query where they can
                (docs/confidence.md), so this is what they add after it;
  QueryPilot    the whole ask() as the client sees it, less the model call
                (llm_ms), the first query and the candidates node: the ask's
                own overhead outside the queries, once warm: a file in
                rollback mode has its value index read in slices during its
                connection's first asks (file_budget_ms in all), which the
                bench reports apart before it measures.

and the prompt and completion sizes the scripted model reports (characters / 4).
Prints medians over --runs asks of each, how many alternatives ran and how
many were dropped past their time, and the ratio of the whole ask with three
readings to the whole ask with one.

Usage: bench/candidates.py [--rows N] [--runs N] [--build DIR]
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
from benchlib import connect  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

QUESTION = "What is the total amount per region?"
# The same question, worded so that the scripted model answers it with three
# queries: the two kinds of asks alternate, so that both see the same load.
QUESTION3 = "What is the total amount for every region?"
FIRST = "SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY region"
OTHERS = ["SELECT region, TOTAL(amount) AS total FROM sales GROUP BY region",
          "SELECT s.region, SUM(s.amount) AS total_amount, COUNT(*) AS sales FROM sales s GROUP BY s.region"]


def reply(queries):
    return "The total per region:\n\n" + "\n".join("```sql\n%s\n```" % q for q in queries)


def make_db(path, rows):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE sales (id INTEGER PRIMARY KEY, region TEXT NOT NULL, product TEXT NOT NULL, "
                "amount REAL NOT NULL)")
    regions = ["North", "South", "East", "West", "Central"]
    con.executemany("INSERT INTO sales VALUES (?, ?, ?, ?)",
                    ((i, regions[i % 5], "product %d" % (i % 997), (i % 1000) / 4.0) for i in range(1, rows + 1)))
    con.commit()
    con.close()


def ask(con, question=QUESTION):
    t0 = time.perf_counter()
    rows = con.execute("SELECT row FROM ask(?)", (question,)).fetchall()
    wall = (time.perf_counter() - t0) * 1000.0
    assert len(rows) == 5, rows
    llm_ms, node_times, prompt, completion, run_id, alternatives = con.execute(
        "SELECT llm_ms, node_times, prompt_tokens, completion_tokens, id, alternatives FROM agent_runs "
        "ORDER BY id DESC LIMIT 1").fetchone()
    others = json.loads(alternatives)[1:] if alternatives else []
    (exec_ms,) = con.execute("SELECT exec_ms FROM agent_attempts WHERE run_id = ? AND attempt = 1",
                             (run_id,)).fetchone()
    nodes = json.loads(node_times)
    candidates = nodes.get("candidates", 0.0)
    return {"wall": wall, "llm": llm_ms, "first": exec_ms, "candidates": candidates,
            "own": wall - llm_ms - exec_ms - candidates, "prompt": prompt or 0, "completion": completion or 0,
            "index": nodes.get("load_schema/value_index", 0.0),
            "ran": sum(1 for a in others if a["ran"]), "dropped": sum(1 for a in others if not a["ran"])}


def warm_up(con, question, limit=60):
    """Asks until one reads no values itself: a database file in rollback
    mode is indexed in slices during its connection's first asks (at most
    file_budget_ms in all), then never again. Returns how many asks read
    values and the time they spent on it."""
    asks, spent = 0, 0.0
    for _ in range(limit):
        s = ask(con, question)
        if s["index"] < 1.0:
            break
        asks += 1
        spent += s["index"]
    return asks, spent


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1000000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    args = ap.parse_args()
    os.environ["QP_BUILD_DIR"] = os.path.abspath(args.build)
    import harness  # noqa: E402 (needs QP_BUILD_DIR)

    tmp = tempfile.mkdtemp(prefix="qp-bench-")
    kinds = (("1 query", QUESTION, [FIRST]), ("3 queries", QUESTION3, [FIRST] + OTHERS))
    llm = harness.ScriptedLLM({"rules": [{"match": q.split("amount ")[1].rstrip("?"), "replies": [reply(queries)]}
                                         for _, q, queries in kinds]})
    try:
        db = os.path.join(tmp, "sales.db")
        make_db(db, args.rows)
        print("candidates: one query per reply against three, %d rows, %d warm asks each, alternating (medians, ms)"
              % (args.rows, args.runs))
        cons = {}
        for name, question, _ in kinds:
            con = connect(harness.EXTENSION, db, llm.base)
            con.execute("SELECT agent_config('answer_cache', 0)")
            asks, spent = warm_up(con, question)  # fills the schema cache and the value index
            print("  %s: the value index was read in the first %d asks, %.0f ms in all" % (name, asks, spent))
            cons[name] = con
        samples = {name: [] for name, _, _ in kinds}
        ratios = []
        for i in range(args.runs):
            order = kinds if i % 2 == 0 else kinds[::-1]
            for name, question, _ in order:
                samples[name].append(ask(cons[name], question))
            ratios.append(samples["3 queries"][-1]["wall"] / samples["1 query"][-1]["wall"])
        for con in cons.values():
            con.close()
        print("%-9s %9s %9s %11s %11s %11s %8s %11s" % ("reply", "whole", "model", "first query", "candidates",
                                                        "QueryPilot", "prompt", "completion"))
        results = {}
        for name, _, _ in kinds:
            med = {k: statistics.median(s[k] for s in samples[name]) for k in samples[name][0]}
            results[name] = med
            print("%-9s %9.1f %9.1f %11.1f %11.1f %11.2f %8.0f %11.0f" % (
                name, med["wall"], med["llm"], med["first"], med["candidates"], med["own"], med["prompt"],
                med["completion"]))
        ran = sum(s["ran"] for s in samples["3 queries"])
        dropped = sum(s["dropped"] for s in samples["3 queries"])
        print("alternatives: %d ran, %d dropped (past their time) over %d asks" % (ran, dropped, args.runs))
        one, three = results["1 query"], results["3 queries"]
        print("extra SQL time of the two alternatives: %.1f ms (%.2fx the first query's)"
              % (three["candidates"], three["candidates"] / one["first"] if one["first"] else 0))
        print("three readings / one reading, whole ask: %.2fx the medians, %.2fx the median of each round's"
              % (three["wall"] / one["wall"], statistics.median(ratios)))
        print(json.dumps(results))
    finally:
        llm.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
