"""Runs every hardening check and prints one table: the adversarial SQL
corpus, instructions stored in the data, provider faults, and the fuzzers
for a set time. Exits non-zero if anything crashed, did the unexpected, or
changed a database.

Usage: python3 tests/hardening/harden.py [--fuzz-seconds N] [--cases]
(scripts/harden.sh builds first and runs this.)
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))

import corpus  # noqa: E402
import faults  # noqa: E402
from harness import SOURCE_DIR, ScriptedLLM  # noqa: E402


def start_fuzzers(seconds):
    """scripts/fuzz.sh (build, then each harness for `seconds`), running."""
    # Its output goes to a file, not a pipe that nobody reads until it ends.
    out = tempfile.TemporaryFile(mode="w+")
    p = subprocess.Popen([os.path.join(SOURCE_DIR, "scripts", "fuzz.sh"), str(seconds)], cwd=SOURCE_DIR,
                         stdout=out, stderr=subprocess.STDOUT, text=True)
    p.output = out
    return p


def fuzzer_rows(p):
    """Rows from a finished scripts/fuzz.sh: one per harness."""
    p.wait()
    p.output.seek(0)
    stdout, stderr = p.output.read(), ""
    rows = []
    for line in stdout.splitlines():
        m = re.match(r"^(\w+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", line)
        if m:
            rows.append({"part": "fuzz %s" % m.group(1), "cases": int(m.group(3)), "per_second": int(m.group(4)),
                         "corpus": int(m.group(5)), "crashed": int(m.group(6))})
    if p.returncode != 0 and not any(r["crashed"] for r in rows):
        sys.stderr.write(stdout + stderr)
        rows.append({"part": "fuzz (build or run failed)", "cases": 0, "crashed": 1})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fuzz-seconds", type=int, default=60, help="per harness; 0 skips fuzzing")
    ap.add_argument("--cases", action="store_true", help="also print every corpus case and fault")
    args = ap.parse_args()

    rows = []
    # The fuzzers build and run while the corpus and the faults run: those
    # mostly wait on the shell and the network, leaving the cores free. Each
    # harness still runs for its full time.
    fuzzers = start_fuzzers(args.fuzz_seconds) if args.fuzz_seconds > 0 else None
    llm = ScriptedLLM()
    try:
        with tempfile.TemporaryDirectory() as d:
            results, summary = corpus.run_corpus(llm, d)
            rows.append(summary)
            if args.cases or summary["unexpected"]:
                print(corpus.cases_table(results) + "\n")
            rows.append(corpus.run_injection(llm, d))
    finally:
        llm.close()
    with tempfile.TemporaryDirectory() as d:
        fault_results, summary = faults.run_faults(d)
        rows.append(summary)
        if args.cases or summary["unexpected"]:
            print(faults.faults_table(fault_results) + "\n")
    if fuzzers:
        rows += fuzzer_rows(fuzzers)

    header = "%-26s %10s %8s %8s %9s %7s %11s %8s  %s" % (
        "part", "cases", "refused", "bounded", "answered", "errors", "unexpected", "crashed", "database unchanged")
    print(header)
    print("-" * len(header))
    bad = 0
    for r in rows:
        fuzz = r["part"].startswith("fuzz")
        unchanged = "-" if fuzz else ("yes" if r["db_unchanged"] else "NO")
        cells = ["-"] * 5 if fuzz else [r["refused"], r["bounded"], r["answered"], r["errors"], r["unexpected"]]
        print("%-26s %10s %8s %8s %9s %7s %11s %8s  %s" % tuple([r["part"], r["cases"]] + cells + [r["crashed"], unchanged]))
        bad += r["crashed"] + (0 if fuzz else r["unexpected"] + (unchanged != "yes"))
    fuzz_rows = [r for r in rows if r["part"].startswith("fuzz") and "per_second" in r]
    if fuzz_rows:
        print("\nfuzzing: %d s per harness; executions are the 'cases' column (%s)" % (
            args.fuzz_seconds, ", ".join("%s %d/s" % (r["part"][5:], r["per_second"]) for r in fuzz_rows)))
    print("\ncrashed: %d; database unchanged: %s" % (
        sum(r["crashed"] for r in rows), "yes" if all(r.get("db_unchanged", True) for r in rows) else "NO"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
