"""Checks that the built extension gives its host one symbol, its entry point
(sqlite3_querypilot_init): a C++ symbol it exported would be bound by the
dynamic linker to the first library that defines it, so a host that loads two
builds of QueryPilot, or another library using the same names (fmt's, the
standard library's inline code), would run one build's code with the other's
data. Exits non-zero naming what else is exported.

Usage: check_exports.py LIBRARY"""
import shutil, subprocess, sys
LIB = sys.argv[1]
NM = shutil.which("nm")
if not NM:
    print("skipped: nm (binutils) is not installed")
    sys.exit(77)
out = subprocess.run([NM, "-D", "--defined-only", LIB], capture_output=True, text=True, check=True).stdout
names = [line.split()[-1] for line in out.splitlines() if line.strip()]
extra = sorted(n for n in names if n != "sqlite3_querypilot_init")
if "sqlite3_querypilot_init" not in names:
    print("%s does not export sqlite3_querypilot_init" % LIB)
    sys.exit(1)
if extra:
    print("%s exports %d symbols besides sqlite3_querypilot_init, e.g.:" % (LIB, len(extra)))
    for n in extra[:10]:
        print("  " + n)
    sys.exit(1)
print("exports: sqlite3_querypilot_init only")
