"""Checks docs/development.md's table "Where a change goes": it has a row for
each kind of change (a node, a finding, an error kind, a record table, a
setting, a provider), and every file or folder it names exists in the tree
(`wire_<name>.cpp` stands for any file that fits, beside the file named
before it in the same cell). Exits non-zero naming each row missing and each
path that does not exist.

Usage: check_change_table.py SOURCE_DIR"""
import glob, os, re, sys
ROOT = sys.argv[1]
KINDS = ("a node", "a finding", "an error kind", "a record table", "a setting", "a provider")
text = open(os.path.join(ROOT, "docs", "development.md")).read()
section = text.split("## Where a change goes", 1)[1] if "## Where a change goes" in text else ""
rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("|---")]
rows = [r for r in rows if not r.startswith("| a change of this kind")]
bad = 0
for kind in KINDS:
    if not any(r.startswith("| " + kind) for r in rows):
        print("docs/development.md: no row for %s" % kind); bad += 1
checked = 0
for row in rows:
    cells = [c.strip() for c in row.strip("|").split("|")]
    if len(cells) != 2:
        print("docs/development.md: a row that is not two cells: %s" % row); bad += 1
        continue
    folder = ""
    for name in re.findall(r"`([^`]+)`", cells[1]):
        if "/" not in name and "<" not in name: continue  # a symbol, not a path
        if "/" not in name: name = folder + name  # beside the file named before it
        folder = name.rsplit("/", 1)[0] + "/" if "/" in name else ""
        pattern = os.path.join(ROOT, re.sub(r"<[^>]+>", "*", name))
        checked += 1
        if not glob.glob(pattern):
            print("docs/development.md names %s (%s), which does not exist" % (name, cells[0])); bad += 1
print("paths the table names: %d; missing or wrong: %d" % (checked, bad))
sys.exit(1 if bad or not checked else 0)
