"""Checks that includes point down the layers of agent/, as ARCHITECTURE.md
draws them, and that ext/ (the SQLite face) reaches the agent only through
the session, the executor's public header and agent/base/; what a header
brings in counts as included, however many headers away: exits non-zero
and names each include that breaks a rule, with the chain that brings it.
Each folder of agent/ has its rule, and agent/'s top level holds at most
MAX_TOP_LEVEL_CPP .cpp files; a folder without a rule, or one file too
many, fails too.

The rules are what CMakeLists.txt links as well: each folder is a library,
qp_<folder> (code that never calls SQLite) and qp_<folder>_sqlite (code that
does; qp_agent is agent/'s top level), and its target_link_libraries list
names the folders it may use. An #include of a folder its library does not
link fails; so does a list that differs from the folder's rule below, a
library that never calls SQLite linking one that does (the fuzzers link
those alone), and a source of agent/ that no folder library of its own
folder compiles.

Usage: check_layers.py SOURCE_DIR"""
import os, re, sys
ROOT = sys.argv[1]
# Which folders each layer may include, besides its own. "agent" is the
# files at agent/'s top level (the run's state machine, its model calls, the
# settings, explanations); "session" is above it all, and ext/ above that.
ALLOWED = {
    "ext": {"base", "ext"},
    "session": {"agent", "answers", "chart", "prompt", "sql", "quality", "knowledge", "memory",
                "providers", "base"},
    "answers": {"agent", "prompt", "sql", "quality", "knowledge", "memory", "providers", "base"},
    "chart": {"agent", "prompt", "sql", "quality", "knowledge", "memory", "providers", "base"},
    "agent": {"prompt", "sql", "quality", "knowledge", "memory", "providers", "base"},
    # The state machine behind agent/agent.h: its nodes and their state.
    "run": {"agent", "prompt", "sql", "quality", "knowledge", "memory", "providers", "base"},
    "prompt": {"quality", "knowledge", "memory", "providers", "sql", "base"},
    "quality": {"knowledge", "sql", "base"},
    "knowledge": {"sql", "base"},
    "memory": {"sql", "base"},
    "sql": {"base"},
    "providers": {"base"},
    "base": set(),
}
# agent/'s top level holds at most this many .cpp files; the rest live in
# folders named for what they do.
MAX_TOP_LEVEL_CPP = 4
# The headers of other layers ext/ may include besides those.
EXT_ENTRY = {"agent/session/session.h", "agent/sql/executor.h"}
# What ext/ may reach through them (what a header brings in, it brings in
# transitively): the session's own types and the executor's. Nothing of the
# history, the metrics, the knowledge or the critic reaches ext/ but through
# the session's methods.
EXT_REACH = EXT_ENTRY | {"agent/answers/answers.h", "agent/sql/statement.h", "agent/sql/watchdog.h"}
# The one source of agent/ outside the folder libraries: the linked SQLite's
# routine table, compiled into qp_agent_linked alone.
OUTSIDE_FOLDER_LIBRARIES = {"agent/base/sqlite_linked.cpp"}
def cmake_libraries(root):
    """CMakeLists.txt's folder libraries: {target: (layer, calls_sqlite,
    sources, linked targets)}."""
    with open(os.path.join(root, "CMakeLists.txt")) as f:
        text = "\n".join(line.split("#", 1)[0] for line in f)
    libs = {}
    for name, args in re.findall(r"qp_folder_library\(\s*(\w+)([^)]*)\)", text):
        m = re.fullmatch(r"qp_(\w+?)(_sqlite)?", name)
        libs[name] = (m.group(1) if m else None, bool(m and m.group(2)), args.split(), set())
    for name, args in re.findall(r"target_link_libraries\(\s*(\w+)\s+PUBLIC([^)]*)\)", text):
        if name in libs: libs[name][3].update(args.split())
    return libs
LIBS = cmake_libraries(ROOT)
def library_layer(target):
    return LIBS[target][0] if target in LIBS else None
def layer(path):
    parts = path.split("/")
    if parts[0] == "ext": return "ext"
    if parts[0] != "agent": return None
    return parts[1] if len(parts) > 2 else "agent"
INCLUDE = re.compile(r'#include "((?:agent|ext)/[^"]+)"')
def includes(rel):
    path = os.path.join(ROOT, rel)
    if not os.path.exists(path): return []
    return INCLUDE.findall(open(path).read())
def brought_in(rel):
    """Every header of the tree `rel` brings in, directly or through others,
    with the chain that brings it."""
    seen = {}
    todo = [(inc, [inc]) for inc in includes(rel)]
    while todo:
        inc, chain = todo.pop()
        if inc in seen: continue
        seen[inc] = chain
        todo.extend((nxt, chain + [nxt]) for nxt in includes(inc) if nxt not in seen)
    return seen
# What each folder's libraries link, as folders: where CMakeLists.txt has a
# library of the folder, its includes are held to this.
LINKED = {}
for target, (me, _, _, links) in LIBS.items():
    LINKED.setdefault(me, set()).update(library_layer(t) for t in links if library_layer(t) != me)
def allowed(me, inc, direct):
    them = layer(inc)
    if me == "ext" and not direct and inc.endswith(".h") and them not in ("ext", "base"):
        return inc in EXT_REACH
    if me == "ext" and inc in EXT_ENTRY: return True
    return them == me or them in LINKED.get(me, ALLOWED[me])
bad = 0
if not LIBS:
    print("CMakeLists.txt has no folder libraries (qp_folder_library)"); bad += 1
for target, (me, sqlite, sources, links) in sorted(LIBS.items()):
    if me not in ALLOWED or me == "ext":
        print("%s is the library of no folder that has a rule (ALLOWED)" % target); bad += 1
        continue
    for t in sorted(links):
        if t.startswith("qp_") and t not in LIBS:
            print("%s links %s, which is no folder library" % (target, t)); bad += 1
        elif t in LIBS and library_layer(t) != me and library_layer(t) not in ALLOWED[me]:
            print("%s (%s) links %s (%s), which the folder's rule does not allow" %
                  (target, me, t, library_layer(t))); bad += 1
        elif t in LIBS and not sqlite and LIBS[t][1]:
            print("%s never calls SQLite but links %s, which does" % (target, t)); bad += 1
    for src in sources:
        if not src.startswith("agent/") or layer(src) != me:
            print("%s compiles %s, which is not of its folder (%s)" % (target, src, me)); bad += 1
for me in sorted(set(LINKED) & set(ALLOWED)):
    if LINKED[me] != ALLOWED[me]:
        print("CMakeLists.txt links %s to %s; its rule says %s" %
              (me, ", ".join(sorted(LINKED[me])) or "nothing", ", ".join(sorted(ALLOWED[me])) or "nothing"))
        bad += 1
compiled = {}
for target, (_, _, sources, _) in LIBS.items():
    for src in sources: compiled.setdefault(src, []).append(target)
for dirpath, _, files in os.walk(os.path.join(ROOT, "agent")):
    for f in sorted(files):
        rel = os.path.relpath(os.path.join(dirpath, f), ROOT)
        if not f.endswith(".cpp") or rel in OUTSIDE_FOLDER_LIBRARIES: continue
        if len(compiled.get(rel, [])) != 1:
            print("%s is compiled by %s; it must be by one library of its folder" %
                  (rel, ", ".join(compiled.get(rel, [])) or "no folder library")); bad += 1
for d in ("agent", "ext"):
    for dirpath, _, files in os.walk(os.path.join(ROOT, d)):
        for f in files:
            if not f.endswith((".h", ".cpp")): continue
            rel = os.path.relpath(os.path.join(dirpath, f), ROOT)
            me = layer(rel)
            direct = set(includes(rel))
            for inc in sorted(direct):
                if not allowed(me, inc, True):
                    print("%s (%s) includes %s (%s)%s" % (rel, me, inc, layer(inc),
                          ", which its library does not link" if me in LINKED else "")); bad += 1
            for inc, chain in sorted(brought_in(rel).items()):
                if inc in direct: continue
                if not allowed(me, inc, False):
                    print("%s (%s) brings in %s (%s) through %s" %
                          (rel, me, inc, layer(inc), " -> ".join(chain[:-1]))); bad += 1
for d in ("agent", "ext"):
    for dirpath, _, files in os.walk(os.path.join(ROOT, d)):
        rel_dir = os.path.relpath(dirpath, ROOT)
        if d == "agent" and rel_dir != "agent" and layer(rel_dir + "/x.h") not in ALLOWED:
            print("%s is a folder no layer rule names (ALLOWED)" % rel_dir); bad += 1
top_cpp = sorted(f for f in os.listdir(os.path.join(ROOT, "agent")) if f.endswith(".cpp"))
if len(top_cpp) > MAX_TOP_LEVEL_CPP:
    print("agent/ holds %d .cpp files at its top level (%s); at most %d" %
          (len(top_cpp), ", ".join(top_cpp), MAX_TOP_LEVEL_CPP)); bad += 1
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
