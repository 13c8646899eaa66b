#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/) with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer, runs each for SECONDS (default 60), as many at
# once as there are cores, and prints
# one line per harness: executions, executions per second, corpus size, and
# crashes (a crash, leak, hang or sanitizer report stops the harness and
# leaves the input in build-fuzz/artifacts/).
#
# Usage: scripts/fuzz.sh [SECONDS] [HARNESS...]
#        scripts/fuzz.sh --build-only   (builds the harnesses and stops)
# The committed seeds in fuzz/corpus/ are copied, never written to.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_ONLY=0
if [ "${1:-}" = "--build-only" ]; then
  BUILD_ONLY=1
  shift
fi
SECONDS_EACH=${1:-60}
shift || true
HARNESSES=("$@")
[ ${#HARNESSES[@]} -gt 0 ] || HARNESSES=(extract sql_refs classify reply_openai reply_anthropic options)

scripts/install-deps.sh clang libclang-rt-14-dev
# Ninja for new build trees: it compiles a target's sources as soon as they
# can be, not after the libraries it links have been archived.
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
# QP_WERROR=ON in the environment fails the build on any warning (CI sets it).
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -DQP_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DQP_WERROR="${QP_WERROR:-OFF}" >/dev/null
cmake --build "$BUILD" -j"$(nproc)" >/dev/null
[ "$BUILD_ONLY" -eq 0 ] || exit 0

mkdir -p "$BUILD/artifacts"
# Runs one harness for SECONDS_EACH and writes its row to $BUILD/fuzz_$h.row.
run_one() {
  local h=$1 work="$BUILD/corpus/$1" log="$BUILD/fuzz_$1.log" rc execs corpus crashes=0
  mkdir -p "$work"
  cp -n fuzz/corpus/"$h"/* "$work"/ 2>/dev/null || true
  set +e
  "$BUILD/fuzz/fuzz_$h" "$work" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$h-" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  execs=${execs:-0}
  corpus=$(find "$work" -type f | wc -l)
  [ "$rc" -eq 0 ] || crashes=1
  printf '%-16s %8s %12s %10s %8s %8s\n' "$h" "$SECONDS_EACH" "$execs" \
    "$(( execs / (SECONDS_EACH > 0 ? SECONDS_EACH : 1) ))" "$corpus" "$crashes" >"$BUILD/fuzz_$h.row"
  echo "$rc" >"$BUILD/fuzz_$h.rc"
}

# As many harnesses at once as there are cores: each still runs its full
# SECONDS_EACH, single-threaded, so the figures per harness are unchanged.
JOBS=$(nproc)
running=0
for h in "${HARNESSES[@]}"; do
  rm -f "$BUILD/fuzz_$h.row" "$BUILD/fuzz_$h.rc"
  run_one "$h" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

printf '%-16s %8s %12s %10s %8s %8s\n' harness seconds executions "per second" corpus crashes
failed=0
for h in "${HARNESSES[@]}"; do
  if [ -f "$BUILD/fuzz_$h.row" ]; then
    cat "$BUILD/fuzz_$h.row"
  else
    printf '%-16s %8s %12s %10s %8s %8s\n' "$h" "$SECONDS_EACH" 0 0 0 1
  fi
  rc=$(cat "$BUILD/fuzz_$h.rc" 2>/dev/null || echo 1)
  if [ "$rc" -ne 0 ]; then
    failed=1
    echo "  fuzz_$h failed (exit $rc); see $BUILD/fuzz_$h.log and $BUILD/artifacts/" >&2
    grep -m5 -E 'ERROR|SUMMARY|runtime error' "$BUILD/fuzz_$h.log" >&2 || true
  fi
done
exit $failed
