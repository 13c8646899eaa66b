"""Checks that agent/base/thread_annotations.h makes clang's -Wthread-safety
catch what it should: a snippet that reads guarded state with its mutex held,
waits on a CondVar and uses REQUIRES compiles clean; each snippet that breaks
one rule (a guarded member touched without the lock, a REQUIRES function
called without it, a lock left held, two locks taken against the order
ACQUIRED_AFTER gives) is refused, with the flags CMakeLists.txt gives clang. Exits 77 (skipped) with a
message when clang++ is not installed; non-zero naming the snippet otherwise.

Usage: check_thread_annotations.py SOURCE_DIR"""
import os, re, shutil, subprocess, sys, tempfile
ROOT = sys.argv[1]
CLANG = shutil.which("clang++") or shutil.which("clang++-14")
if not CLANG:
    print("skipped: clang++ is not installed (scripts/install-deps.sh clang installs it)")
    sys.exit(77)
HEAD = """#include "agent/base/thread_annotations.h"
using namespace querypilot;
struct Box {
  Mutex mu;
  Mutex inner ACQUIRED_AFTER(mu);
  CondVar cv;
  int n GUARDED_BY(mu) = 0;
  void AddLocked(int k) REQUIRES(mu) { n += k; }
};
"""
GOOD = """
int Good(Box& b) {
  MutexLock lock(&b.mu);
  b.AddLocked(1);
  while (b.n == 0) b.cv.Wait(&b.mu);
  MutexLock inner(&b.inner);
  return b.n;
}
"""
BAD = {
    "guarded member read without the lock": "int Bad(Box& b) { return b.n; }",
    "guarded member written without the lock": "void Bad(Box& b) { b.n = 2; }",
    "REQUIRES function called without the lock": "void Bad(Box& b) { b.AddLocked(1); }",
    "lock still held at the end of the function": "void Bad(Box& b) { b.mu.Lock(); }",
    "CondVar waited on without the lock": "void Bad(Box& b) { b.cv.Wait(&b.mu); }",
    "locks taken against their order":
        "void Bad(Box& b) { MutexLock i(&b.inner); MutexLock o(&b.mu); }",
}
# The thread-safety flags CMakeLists.txt gives clang.
with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
    FLAGS = re.search(r'CMAKE_CXX_COMPILER_ID MATCHES "Clang"\)\s*add_compile_options\(([^)]*)\)', f.read())
FLAGS = FLAGS.group(1).split() if FLAGS else []
def compiles(body):
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
        f.write(HEAD + body)
    try:
        r = subprocess.run([CLANG, "-std=c++20", "-fsyntax-only", *FLAGS, "-Werror",
                            "-I", ROOT, f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    return r.returncode == 0, r.stderr
bad = 0
ok, err = compiles(GOOD)
if not ok:
    print("the correct snippet does not compile:\n" + err); bad += 1
for what, body in BAD.items():
    ok, err = compiles(body)
    if ok:
        print("not caught: %s" % what); bad += 1
    elif "thread-safety" not in err:
        print("%s fails for another reason:\n%s" % (what, err)); bad += 1
print("thread-safety checks that did not hold: %d" % bad)
sys.exit(1 if bad else 0)
