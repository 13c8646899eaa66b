"""Checks docs/development.md's table "Where a change goes": it has a row for
each kind of change (a node, a finding, an error kind, a record table, a
setting, a provider, a folder of agent/, a kind of ask table), and every file or folder it names exists in the tree
(`wire_<name>.cpp` stands for any file that fits, beside the file named
before it in the same cell), and every name of the code it gives (`kNodes`,
`FindingRows()`, `Agent::NextNode`) is in the file named before it: the
row it says to add is where it says. Exits non-zero naming each row missing,
each path that does not exist and each name not in its file.

Usage: check_change_table.py SOURCE_DIR"""
import glob, os, re, sys
ROOT = sys.argv[1]
KINDS = ("a node", "a finding", "an error kind", "a record table", "a setting", "a provider",
         "a folder of `agent/`", "a kind of table the `ask` module makes")
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
    last_file = None
    for name in re.findall(r"`([^`]+)`", cells[1]):
        if "/" not in name and "<" not in name:  # a name of the code, in the file before it
            symbol = name.split("::")[-1].rstrip("()")
            if last_file is None or not os.path.isfile(last_file): continue
            checked += 1
            with open(last_file) as f:
                if not re.search(r"\b%s\b" % re.escape(symbol), f.read()):
                    print("docs/development.md names %s in %s (%s), which does not hold it" %
                          (name, os.path.relpath(last_file, ROOT), cells[0])); bad += 1
            continue
        if "/" not in name: name = folder + name  # beside the file named before it
        folder = name.rsplit("/", 1)[0] + "/" if "/" in name else ""
        pattern = os.path.join(ROOT, re.sub(r"<[^>]+>", "*", name))
        checked += 1
        found = glob.glob(pattern)
        last_file = found[0] if len(found) == 1 else None
        if not found:
            print("docs/development.md names %s (%s), which does not exist" % (name, cells[0])); bad += 1
print("paths the table names: %d; missing or wrong: %d" % (checked, bad))
sys.exit(1 if bad or not checked else 0)
