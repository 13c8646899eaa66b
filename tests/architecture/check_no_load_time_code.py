"""Checks that loading the extension runs none of its own code: the library
holds no static initialiser (a global whose value is computed when the
library is loaded, which compilers emit as a _GLOBAL__sub_I_* function).

A host may load QueryPilot on several threads at once (each connection loads
it), and what runs at load time runs under the dynamic loader's lock, which
ThreadSanitizer cannot see; a table every connection reads is therefore made
when the library is compiled (constexpr / constinit), never when it is loaded.

Usage: check_no_load_time_code.py LIBRARY..."""
import shutil, subprocess, sys
NM = shutil.which("nm")
if not NM:
    print("skipped: nm (binutils) is not installed")
    sys.exit(77)
bad = []
for lib in sys.argv[1:]:
    out = subprocess.run([NM, "-C", lib], capture_output=True, text=True, check=True).stdout
    inits = [line.split()[-1] for line in out.splitlines() if "_GLOBAL__sub_I" in line]
    if inits:
        bad.append((lib, inits))
for lib, inits in bad:
    print(f"{lib}: code runs when it is loaded: {', '.join(inits)}")
    print("  a global is initialised at load time; make it constexpr or constinit")
sys.exit(1 if bad else 0)
