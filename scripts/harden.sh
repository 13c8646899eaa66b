#!/usr/bin/env bash
# One command for the hardening checks: builds QueryPilot, then runs the
# adversarial SQL corpus, instructions stored in the data, the provider
# faults and each fuzzer for FUZZ_SECONDS (default 60), and prints a table:
# cases tried, refused, bounded, crashed, database unchanged. Everything runs
# on 127.0.0.1. Exits non-zero if anything crashed or a database changed.
#
# Usage: scripts/harden.sh [FUZZ_SECONDS] [--cases]
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${1:-60}
shift || true
scripts/install-deps.sh
# Ninja for new build trees: it compiles a target's sources as soon as they
# can be, not after the libraries it links have been archived.
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" >/dev/null
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || PYTHON=python3
QP_BUILD_DIR="$PWD/$BUILD_DIR" QP_SQLITE3="$(command -v sqlite3)" \
  exec "$PYTHON" tests/hardening/harden.py --fuzz-seconds "$FUZZ_SECONDS" "$@"
