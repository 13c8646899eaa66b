#!/usr/bin/env bash
# Builds QueryPilot and runs every test: the GoogleTest unit tests and the
# end-to-end tests through the sqlite3 shell and Python's sqlite3 module
# against the scripted model on 127.0.0.1. Nothing leaves this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Ninja for new build trees: it compiles a target's sources as soon as they
# can be, not after the libraries it links have been archived.
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}
BUILD_DIR=${BUILD_DIR:-build}
# The client tests' npm packages download (once per machine) while
# QueryPilot builds.
mkdir -p "$BUILD_DIR"
(cd tests/e2e && python3 install_clients.py >"../../$BUILD_DIR/install-clients.log" 2>&1) &
clients=$!
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
wait "$clients" || true
src=$(pwd)
cd "$BUILD_DIR"
# Twice as many tests at once as there are cores: most end-to-end tests
# spend their time waiting on the shell, python3 and the scripted model.
# What was skipped, and why, is printed at the end (tests/e2e/run_suite.py
# records it; a suite whose every test was skipped is listed by ctest too).
rm -rf skipped
status=0
ctest --output-on-failure -j"$(( $(nproc) * 2 ))" "$@" || status=$?
python3 "$src/tests/e2e/skipped.py" .
exit "$status"
