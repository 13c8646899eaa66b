#!/usr/bin/env python3
"""Prompt size per question on each dataset database.

Runs querypilot-eval over ../shared/datasets with the replay model and no
retry, for the first prediction file that covers each database, and reports
the size of the first request QueryPilot sends for each question (system
prompt with the schema and sample rows, plus the question): characters and
an estimate of tokens (characters / 4; English text and SQL average about 4
characters per token in GPT-style tokenizers).

Usage: bench/prompt_size.py [--data DIR] [--build DIR]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import pct  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(HERE, "..", "..", "shared", "datasets"))
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    args = ap.parse_args()
    preds = os.path.join(args.data, "predictions")
    if not os.path.isdir(preds):
        sys.exit("no prediction files at %s" % preds)
    chosen = {}  # db_id -> first prediction file covering it
    for f in sorted(os.listdir(preds)):
        if f.endswith(".jsonl"):
            with open(os.path.join(preds, f)) as fh:
                db = json.loads(fh.readline())["db_id"]
            chosen.setdefault(db, os.path.join(preds, f))
    print("first-request prompt size per question (system prompt with schema and sample rows, plus the question)")
    print("%-12s  %9s  %8s  %8s  %8s  %12s" % ("database", "questions", "median", "p95", "max", "~tokens med"))
    out = []
    for db, pred in sorted(chosen.items()):
        with tempfile.NamedTemporaryFile(suffix=".json") as tf:
            subprocess.run([os.path.join(args.build, "querypilot-eval"), "--data", args.data, "--replay", pred,
                            "--max-attempts", "1", "--json", tf.name, "--quiet"],
                           check=True, stdout=subprocess.DEVNULL)
            run = json.load(open(tf.name))["runs"][0]
        chars = [q["prompt_chars"] for q in run["questions"] if q["db_id"] == db]
        med = statistics.median(chars)
        r = {"db_id": db, "questions": len(chars), "chars_median": med, "chars_p95": pct(chars, 95),
             "chars_max": max(chars), "tokens_estimate_median": med / 4}
        out.append(r)
        print("%-12s  %9d  %8.0f  %8d  %8d  %12.0f" % (db, len(chars), med, r["chars_p95"], r["chars_max"], med / 4))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
