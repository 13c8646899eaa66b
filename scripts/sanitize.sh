#!/usr/bin/env bash
# The whole test suite on a build with AddressSanitizer and
# UndefinedBehaviorSanitizer (the unit tests with LeakSanitizer; the
# end-to-end tests with the sqlite3 shell and python3 loading the instrumented
# extension), then the concurrency tests on a ThreadSanitizer build.
#
# Usage: scripts/sanitize.sh [ctest arguments for the ASan/UBSan run]
#        scripts/sanitize.sh --build-only   (builds both and stops)
# QP_WERROR=ON in the environment fails the builds on any compiler warning
# (CI sets it).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_ONLY=0
if [ "${1:-}" = "--build-only" ]; then
  BUILD_ONLY=1
  shift
fi
scripts/install-deps.sh
# Ninja for new build trees: it compiles a target's sources as soon as they
# can be, not after the libraries it links have been archived.
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}
ASAN_BUILD=${ASAN_BUILD_DIR:-build-asan}
TSAN_BUILD=${TSAN_BUILD_DIR:-build-tsan}
build_tsan() {
  cmake -S . -B "$TSAN_BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQP_SANITIZE=thread \
    -DQP_WERROR="${QP_WERROR:-OFF}" >/dev/null &&
    cmake --build "$TSAN_BUILD" -j"$(nproc)" --target querypilot_concurrency_test >/dev/null
}

cmake -S . -B "$ASAN_BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQP_SANITIZE=address,undefined \
  -DQP_WERROR="${QP_WERROR:-OFF}" >/dev/null
cmake --build "$ASAN_BUILD" -j"$(nproc)" >/dev/null
if [ "$BUILD_ONLY" -eq 1 ]; then
  build_tsan
  exit 0
fi

echo "== AddressSanitizer + UndefinedBehaviorSanitizer: every test"
# The ThreadSanitizer build goes on while the suite runs (the end-to-end tests
# mostly wait on processes and sockets, leaving the cores free).
build_tsan &
tsan_build=$!
# Twice as many tests at once as there are cores: most end-to-end tests
# spend their time waiting on the shell, python3 and the scripted model.
(cd "$ASAN_BUILD" && UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   ctest --output-on-failure -j"$(( $(nproc) * 2 ))" "$@")

echo "== ThreadSanitizer: threads, shared connections, load/close/reload"
wait "$tsan_build"
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/concurrency/tsan.supp" "$TSAN_BUILD/tests/querypilot_concurrency_test"
