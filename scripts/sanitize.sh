#!/usr/bin/env bash
# The whole test suite on a build with AddressSanitizer and
# UndefinedBehaviorSanitizer (the unit tests with LeakSanitizer; the
# end-to-end tests with the sqlite3 shell and python3 loading the instrumented
# extension), then the concurrency tests on a ThreadSanitizer build.
#
# Usage: scripts/sanitize.sh [ctest arguments for the ASan/UBSan run]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
ASAN_BUILD=${ASAN_BUILD_DIR:-build-asan}
TSAN_BUILD=${TSAN_BUILD_DIR:-build-tsan}

echo "== AddressSanitizer + UndefinedBehaviorSanitizer: every test"
cmake -S . -B "$ASAN_BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQP_SANITIZE=address,undefined >/dev/null
cmake --build "$ASAN_BUILD" -j"$(nproc)" >/dev/null
# The ThreadSanitizer build goes on while the suite runs (the end-to-end tests
# mostly wait on processes and sockets, leaving the cores free).
(cmake -S . -B "$TSAN_BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQP_SANITIZE=thread >/dev/null &&
   cmake --build "$TSAN_BUILD" -j"$(nproc)" --target querypilot_concurrency_test >/dev/null) &
tsan_build=$!
(cd "$ASAN_BUILD" && UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   ctest --output-on-failure -j"$(nproc)" "$@")

echo "== ThreadSanitizer: threads, shared connections, load/close/reload"
wait "$tsan_build"
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/concurrency/tsan.supp" "$TSAN_BUILD/tests/querypilot_concurrency_test"
