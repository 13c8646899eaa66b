"""Prints the tests the last ctest run skipped and why, from the records
tests/e2e/run_suite.py leaves in BUILD_DIR/skipped/: one summary line, then one
line per skipped test. Prints nothing when nothing was skipped.

Usage: skipped.py BUILD_DIR"""
import glob
import os
import sys


def summary(build_dir):
    lines = []
    for path in sorted(glob.glob(os.path.join(build_dir, "skipped", "test_*.txt"))):
        suite = "e2e_" + os.path.basename(path)[len("test_"):-len(".txt")]
        with open(path) as f:
            for line in f:
                if line.strip():
                    lines.append("  %s %s" % (suite, line.rstrip("\n")))
    if not lines:
        return ""
    return "Skipped: %d test%s (the rest ran):\n%s\n" % (len(lines), "" if len(lines) == 1 else "s", "\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.stdout.write(summary(sys.argv[1]))
