"""Checks that includes point down the layers of agent/, as ARCHITECTURE.md
draws them, and that ext/ (the SQLite face) reaches the agent only through
the session, the executor's public header and agent/base/: exits non-zero
and names each include that breaks a rule.

Usage: check_layers.py SOURCE_DIR"""
import os, re, sys
ROOT = sys.argv[1]
# Which folders each layer may include, besides its own.
ALLOWED = {
    "ext": {"base", "ext"},
    "agent": {"sql", "quality", "knowledge", "memory", "providers", "base"},
    "quality": {"knowledge", "sql", "base"},
    "knowledge": {"sql", "base"},
    "memory": {"sql", "base"},
    "sql": {"base"},
    "providers": {"base"},
    "base": set(),
}
# The headers of other layers ext/ may include besides those.
EXT_ENTRY = {"agent/session.h", "agent/sql/executor.h"}
def layer(path):
    parts = path.split("/")
    if parts[0] == "ext": return "ext"
    if parts[0] != "agent": return None
    return parts[1] if len(parts) > 2 else "agent"
bad = 0
for d in ("agent", "ext"):
    for dirpath, _, files in os.walk(os.path.join(ROOT, d)):
        for f in files:
            if not f.endswith((".h", ".cpp")): continue
            rel = os.path.relpath(os.path.join(dirpath, f), ROOT)
            me = layer(rel)
            for inc in re.findall(r'#include "((?:agent|ext)/[^"]+)"', open(os.path.join(ROOT, rel)).read()):
                them = layer(inc)
                if me == "ext" and inc in EXT_ENTRY: continue
                if them != me and them not in ALLOWED[me]:
                    print("%s (%s) includes %s (%s)" % (rel, me, inc, them)); bad += 1
print("includes that point up: %d" % bad)
# One recipe runs SQL: the critic's check, then the executor
# (agent/sql/verified.cpp). Nothing else starts a LiveQuery.
starts = 0
for d in ("agent", "ext"):
    for dirpath, _, files in os.walk(os.path.join(ROOT, d)):
        for f in files:
            if not f.endswith(".cpp"): continue
            rel = os.path.relpath(os.path.join(dirpath, f), ROOT)
            if rel in ("agent/sql/verified.cpp", "agent/sql/executor.cpp"): continue
            if "LiveQuery::Start(" in open(os.path.join(ROOT, rel)).read():
                print("%s starts a LiveQuery itself; use RunVerified (agent/sql/verified.h)" % rel); starts += 1
print("places that start SQL besides RunVerified: %d" % starts)
sys.exit(1 if bad or starts else 0)
