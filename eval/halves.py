#!/usr/bin/env python3
"""The reflection figures of a querypilot-eval run, split into two halves of
the questions (by the parity of the CRC-32 of each question's id, so the
split is fixed and independent of any rule): first attempts that ran, wrong
ones flagged (recall) and right ones sent back, per prediction file and
half, set comparison.

Usage: querypilot-eval ... --max-attempts 1 --json results.json; eval/halves.py results.json
"""
import json
import sys
import zlib


def half(question_id):
    return "A" if zlib.crc32(question_id.encode()) % 2 == 0 else "B"


def main():
    runs = json.load(open(sys.argv[1]))["runs"]
    print("| file | half | wrong | flagged wrong | recall | right | right sent back |")
    print("|---|---|---|---|---|---|---|")
    totals = {}
    for run in runs:
        for h in ("A", "B"):
            wrong = flagged_wrong = right = flagged_right = 0
            for q in run["questions"]:
                if half(q["id"]) != h or not q["attempt_scores"]:
                    continue
                a = q["attempt_scores"][0]
                if a.get("error_type"):
                    continue  # did not run: not the result checks' business
                if a["set_ok"]:
                    right += 1
                    flagged_right += bool(a["flagged"])
                else:
                    wrong += 1
                    flagged_wrong += bool(a["flagged"])
            t = totals.setdefault(h, [0, 0, 0, 0])
            for i, v in enumerate((wrong, flagged_wrong, right, flagged_right)):
                t[i] += v
            print("| %s | %s | %d | %d | %.1f%% | %d | %d |" % (
                run["name"], h, wrong, flagged_wrong, 100.0 * flagged_wrong / wrong if wrong else 0, right,
                flagged_right))
    for h, (wrong, flagged_wrong, right, flagged_right) in sorted(totals.items()):
        print("| all files | %s | %d | %d | %.1f%% | %d | %d (%.2f%%) |" % (
            h, wrong, flagged_wrong, 100.0 * flagged_wrong / wrong, right, flagged_right,
            100.0 * flagged_right / right))


if __name__ == "__main__":
    main()
