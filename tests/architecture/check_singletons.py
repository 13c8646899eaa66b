"""Checks that every process-wide object of the extension says why it is
process-wide. The objects are read from the built library, not guessed from
the source: each function-local static made at its first use has a guard
variable (nm: "guard variable for F()::name"). Constant tables (named
kSomething, or declared `static const`) hold no state, and thread_locals are
per thread: neither counts. For each other one, the lines from the comment
above the function that holds it (with the declarations beside that
function) to the static itself, or the comment of the type it makes, must
say "process-wide" or "once per process" and why. Exits non-zero naming each
object that does not.

Usage: check_singletons.py SOURCE_DIR LIBRARY"""
import os, re, shutil, subprocess, sys
ROOT, LIB = sys.argv[1], sys.argv[2]
NM = shutil.which("nm")
if not NM:
    print("skipped: nm (binutils) is not installed")
    sys.exit(77)
out = subprocess.run([NM, "-C", LIB], capture_output=True, text=True, check=True).stdout
objects = set()
for line in out.splitlines():
    m = re.search(r"guard variable for (.*)$", line)
    if not m: continue
    full = m.group(1)
    if "querypilot" not in full: continue  # the standard library's and fmt's own
    name = full.rsplit("::", 1)[-1]
    if re.fullmatch(r"k[A-Z]\w*", name): continue  # a constant table, made once
    # The function holding it: the last name before its parameter list.
    fn = re.search(r"(\w+)(?:\[[^\]]*\])?\([^()]*(?:\([^()]*\)[^()]*)*\)(?: const)?::%s$" % re.escape(name), full)
    objects.add((fn.group(1) if fn else "", name, full))
SOURCES = []
for d in ("agent", "ext"):
    for dirpath, _, files in os.walk(os.path.join(ROOT, d)):
        SOURCES += [os.path.join(dirpath, f) for f in files if f.endswith(".cpp")]
WHY = re.compile(r"process-wide|once per process", re.I)
def explained(fn, name):
    """True, False, or None for a constant or a thread_local: whether, in
    some source, the static `name` inside function `fn` has a comment that
    says why it is process-wide."""
    for path in SOURCES:
        with open(path) as f:
            lines = f.read().splitlines()
        for i, line in enumerate(lines):
            if re.match(r"\s*\}\s*%s;" % re.escape(name), line):  # static struct S { ... } name;
                while i > 0 and "static" not in lines[i]: i -= 1
                line = lines[i]
            elif not re.search(r"\b(static|thread_local)\b[^;=(]*\b%s\b" % re.escape(name), line):
                continue
            if "thread_local" in line or re.search(r"\bstatic\s+(const|constexpr)\b", line):
                return None
            # Back to the function's start, then over the lines beside it (a
            # comment, the mutex that guards it) to the blank line above.
            j = i
            while j > 0 and not re.match(r"\S.*\b%s\(" % re.escape(fn), lines[j]): j -= 1
            while j > 0 and lines[j - 1].strip(): j -= 1
            text = "\n".join(lines[j:i + 1])
            # ... and the comment of the type it makes (new T).
            t = re.search(r"new (\w+)", "\n".join(lines[i:i + 2]))
            if t:
                for k, l in enumerate(lines):
                    if re.match(r"(struct|class) %s\b" % re.escape(t.group(1)), l):
                        c = k
                        while c > 0 and lines[c - 1].lstrip().startswith("//"): c -= 1
                        text += "\n".join(lines[c:k])
            return bool(WHY.search(text))
    return False
bad = 0
counted = 0
for fn, name, full in sorted(objects):
    why = explained(fn, name)
    if why is None: continue
    counted += 1
    if not why:
        print("%s: no comment says why it is process-wide" % full); bad += 1
print("process-wide objects: %d; without a reason: %d" % (counted, bad))
sys.exit(1 if bad or not counted else 0)
