#!/usr/bin/env bash
# Measures QueryPilot's execution accuracy and cost on the Spider and BIRD
# questions in ../shared/datasets, answering each question with the SQL a
# published system produced for it (the replay model on 127.0.0.1), once with
# no retry (--max-attempts 1) and once with QueryPilot's corrections (3).
# Prints the table; writes build/eval-results/results.json and chart.svg.
#
# Extra arguments go to querypilot-eval (e.g. --limit 10, --max-attempts 1).
# Set QP_EVAL_DATA to use another dataset folder, and QP_SKIP_BUILD=1 to use
# the build as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
DATA=${QP_EVAL_DATA:-../shared/datasets}
if [ ! -d "$DATA" ]; then
  echo "scripts/eval.sh: no datasets at $DATA (set QP_EVAL_DATA=<folder with questions.jsonl>)" >&2
  exit 1
fi
if [ "${QP_SKIP_BUILD:-0}" != 1 ]; then
  scripts/install-deps.sh
  export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}  # for a new build tree
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD_DIR" -j"$(nproc)" --target querypilot-eval
fi
mkdir -p "$BUILD_DIR/eval-results"
replay=()
if [ -d "$DATA/predictions" ]; then replay=(--replay "$DATA/predictions"); fi
# The questions the predictions answer: Spider dev and BIRD dev, not the broad
# spider_train set beside them (querypilot-eval gold measures that one).
questions=$DATA
if [ -d "$DATA/spider" ] && [ -d "$DATA/bird" ]; then questions="$DATA/spider,$DATA/bird"; fi
exec "$BUILD_DIR/querypilot-eval" --data "$questions" "${replay[@]}" --max-attempts 1,3 \
  --json "$BUILD_DIR/eval-results/results.json" --chart "$BUILD_DIR/eval-results/chart.svg" "$@"
