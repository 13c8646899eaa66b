#!/usr/bin/env python3
"""Model calls per question, with each conversation and memory feature on.

Runs the same small script of questions on the shop database through the
scripted model on 127.0.0.1 and reads agent_runs.llm_calls: a plain first
answer, an ambiguous question (clarify), a repeated question (answer cache),
a question with verified examples (few-shot memory), a follow-up in a
session, a correction with correction_model, and agent_explain().

Usage: bench/calls.py [--build DIR]
"""
import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

COUNT = "SELECT COUNT(*) AS n FROM orders"
REFUNDED = "SELECT COUNT(*) AS n FROM orders WHERE status = 'refunded'"
CANADA = ("SELECT COUNT(*) AS n FROM orders o JOIN customers c ON c.id = o.customer_id "
          "WHERE c.country = 'Canada'")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=None)
    args = ap.parse_args()
    if args.build:
        os.environ["QP_BUILD_DIR"] = os.path.abspath(args.build)
    import harness
    fence = harness.sql_reply
    script = {"rules": [
        {"match": "Question: How many orders are there", "replies": [fence(COUNT)]},
        {"match": "spent the most", "replies": ["```clarify\nWhich period do you mean?\n```"]},
        {"match": "Question: How many orders were refunded", "replies": [fence(REFUNDED)]},
        {"match": "Question: Count the refunded", "replies": [fence(REFUNDED)]},
        {"match": "Question: How many orders came from Canada", "replies": [fence(CANADA)]},
        {"match": "Earlier in this conversation", "replies": [
            "Standalone: How many orders came from France?\n" + fence(CANADA.replace("Canada", "France"))]},
        {"match": "revenue", "replies": [fence("SELECT SUM(nope) FROM products"),
                                         fence("SELECT SUM(price) AS revenue FROM products")]},
        {"match": "SQL:", "replies": ["There are 100 orders in all."]},
    ]}
    steps = [
        ("plain first answer", "SELECT * FROM ask('How many orders are there?')"),
        ("explanation of it (agent_explain)", "SELECT agent_explain(1)"),
        ("the same question again (answer cache)", "SELECT * FROM ask('how many orders are there')"),
        ("ambiguous question (clarify)", "SELECT * FROM ask('Which customers spent the most last year?')"),
        ("verified answer, then marked good", "SELECT * FROM ask('How many orders were refunded?')"),
        (None, "SELECT agent_feedback(4, 'good')"),
        ("similar question (few-shot memory)", "SELECT * FROM ask('Count the refunded orders')"),
        (None, "SELECT agent_config('session', 'alice')"),
        ("first question of a session", "SELECT * FROM ask('How many orders came from Canada?')"),
        ("follow-up in the session", "SELECT * FROM ask('And from France?')"),
        (None, "SELECT agent_config('session', NULL)"),
        (None, "SELECT agent_config('correction_model', 'stronger')"),
        ("a correction with correction_model", "SELECT * FROM ask('What is the total revenue?')"),
    ]
    llm = harness.ScriptedLLM(script)
    try:
        tmp = tempfile.mkdtemp(prefix="qp-bench-")
        db = harness.make_shop_db(tmp)
        # One shell session: the history lives in the connection.
        out = harness.session(db, [s for _, s in steps] + [
            "SELECT id, status, llm_calls, cached_from, examples, explanation IS NOT NULL AS explained "
            "FROM agent_runs"], llm.env())[-1]
        print("%-42s %-20s %-8s %-11s %s" % ("feature", "status", "examples", "cached from", "model calls"))
        labels = [label for label, _ in steps if label and "agent_explain" not in label]
        for label, run in zip(labels, out):
            calls = run["llm_calls"]
            note = ""
            if run["explained"]:
                calls -= 1
                note = "  (+1 for agent_explain)"
            print("%-42s %-20s %-8s %-11s %d%s" % (label, run["status"], run["examples"] or "-",
                                                     run["cached_from"] or "-", calls, note))
    finally:
        llm.close()


if __name__ == "__main__":
    main()
