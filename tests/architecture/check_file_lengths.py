"""Checks that no C++ file (.cpp, .h) under agent/, ext/ or eval/ is over
MAX_LINES lines: a file that grows past it is split by what it does into
files of its own folder. Exits non-zero naming each file over the limit and
its length; fails too when it finds no file at all (a wrong SOURCE_DIR would
otherwise pass).

Usage: check_file_lengths.py SOURCE_DIR"""
import os, sys
ROOT = sys.argv[1]
MAX_LINES = 800
FOLDERS = ("agent", "ext", "eval")
EXTENSIONS = (".cpp", ".h")
checked = 0
bad = 0
for folder in FOLDERS:
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, folder)):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(EXTENSIONS): continue
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                lines = f.read().count(b"\n")
            checked += 1
            if lines > MAX_LINES:
                print("%s: %d lines, over %d: split it by what it does" %
                      (os.path.relpath(path, ROOT), lines, MAX_LINES))
                bad += 1
if checked == 0:
    print("no .cpp or .h file under %s in %s" % (", ".join(FOLDERS), ROOT))
    sys.exit(1)
print("C++ files checked: %d, over %d lines: %d" % (checked, MAX_LINES, bad))
sys.exit(1 if bad else 0)
