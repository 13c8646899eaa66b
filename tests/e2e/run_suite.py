"""Runs one end-to-end suite (a tests/e2e/test_*.py module) as ctest runs
it, and makes its skips visible.

Usage: run_suite.py test_NAME

Exits 0 when every test passed or was skipped with others passing, 1 when one
failed, and 77 (ctest's SKIP_RETURN_CODE, tests/CMakeLists.txt) when every
test of the suite was skipped, so ctest lists the suite as skipped instead of
passed. Each skipped test and its reason is written to
$QP_BUILD_DIR/skipped/<suite>.txt (one "test: reason" a line; the file is
removed when nothing was skipped), which scripts/test.sh prints at the end
(tests/e2e/skipped.py)."""
import importlib
import os
import sys
import unittest

SKIP_RETURN_CODE = 77


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    name = argv[1]
    suite = unittest.defaultTestLoader.loadTestsFromModule(importlib.import_module(name))
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    skipped = [(test.id().split(".", 1)[-1], reason) for test, reason in result.skipped]
    record = os.path.join(os.environ.get("QP_BUILD_DIR", "."), "skipped", name + ".txt")
    if skipped:
        os.makedirs(os.path.dirname(record), exist_ok=True)
        with open(record, "w") as f:
            for test, reason in skipped:
                f.write("%s: %s\n" % (test, " ".join(str(reason).split())))
    elif os.path.exists(record):
        os.remove(record)
    if not result.wasSuccessful():
        return 1
    if skipped and result.testsRun == len(skipped):
        return SKIP_RETURN_CODE
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
