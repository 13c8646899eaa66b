#!/usr/bin/env bash
# Runs QueryPilot on a database of your own against its SCRIPTED TEST MODEL
# on 127.0.0.1, so you can watch the loop (prompt, SQL, check, error, hint,
# correction, agent_runs and agent_attempts) before configuring a real model.
#
# Usage:
#   scripts/try.sh DB                 the sqlite3 shell on DB, QueryPilot loaded
#   scripts/try.sh DB FILE.sql        runs FILE.sql's statements instead
#   scripts/try.sh --script SCRIPT DB [FILE.sql]
#                                     canned replies of your own (the format of
#                                     examples/demo_script.json) instead of the
#                                     policy below
#
# Without --script the scripted model answers, about DB's own tables (from
# scripts/scripted_policy.py): "how many <table>" (its first reply names the
# table wrongly, so you see a correction), "<table> by <column>" (its ten
# commonest values only: LIMIT 10) and "show <table>" (LIMIT 5). Anything else
# gets a reply that lists them. A configured real model (QUERYPILOT_*,
# OPENAI_*, ANTHROPIC_*) is ignored here; nothing leaves this machine, and
# QueryPilot never writes DB.
#
# Builds what it needs first (BUILD_DIR, default build); QP_SKIP_BUILD=1 uses
# the build already there. The scripted model stops when this script ends.
set -euo pipefail
script=""
if [ "${1:-}" = "--script" ]; then
  [ $# -ge 3 ] || { sed -n '5,12p' "$0" >&2; exit 2; }
  script=$(realpath "$2")
  shift 2
fi
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  sed -n '5,12p' "$0" >&2
  exit 2
fi
[ -f "$1" ] || { echo "scripts/try.sh: no database file $1" >&2; exit 2; }
db=$(realpath "$1")
sql=""
if [ $# -eq 2 ]; then
  [ -f "$2" ] || { echo "scripts/try.sh: no SQL file $2" >&2; exit 2; }
  sql=$(realpath "$2")
fi
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
if [ "${QP_SKIP_BUILD:-0}" != 1 ]; then
  scripts/install-deps.sh
  export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD_DIR" -j"$(nproc)" --target querypilot querypilot-scripted-llm
fi
extension=$(realpath "$BUILD_DIR")/querypilot
[ -f "$extension.so" ] && [ -x "$BUILD_DIR/querypilot-scripted-llm" ] ||
  { echo "scripts/try.sh: no $extension.so or $BUILD_DIR/querypilot-scripted-llm (build first)" >&2; exit 1; }

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
if [ -z "$script" ]; then
  script="$work/script.json"
  /usr/bin/python3 scripts/scripted_policy.py "$db" >"$script"
fi
"$BUILD_DIR/querypilot-scripted-llm" --script "$script" --port-file "$work/port" >/dev/null &
server_pid=$!
for _ in $(seq 200); do [ -s "$work/port" ] && break; sleep 0.05; done
[ -s "$work/port" ] || { echo "scripts/try.sh: the scripted model did not start" >&2; exit 1; }

# Only the scripted model: no variable of a real one reaches the extension.
for v in QUERYPILOT_PROVIDER QUERYPILOT_BASE_URL QUERYPILOT_API_KEY QUERYPILOT_MODEL OPENAI_API_KEY \
         OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL; do
  unset "$v"
done
export QUERYPILOT_PROVIDER=openai
export QUERYPILOT_BASE_URL="http://127.0.0.1:$(cat "$work/port")/v1"
export QUERYPILOT_MODEL=scripted-test-model

echo "==> QueryPilot on $db with its SCRIPTED TEST MODEL on 127.0.0.1 (canned replies: $(basename "$script"))."
if [ -z "$sql" ]; then
  cat <<'MSG'
    Try:  SELECT * FROM ask('How many <table> are there?');
          SELECT * FROM ask('<table> by <column>');      -- the ten commonest values
          SELECT id, status, attempts FROM agent_runs;
          SELECT attempt, error_type, error, hint FROM agent_attempts;
    docs/ describes every function; docs/providers/ how to use a real model.
MSG
  sqlite3 -cmd ".load $extension" "$db"
else
  status=0
  sed -e "s#\./build/querypilot#$extension#" -e "/^--/d" "$sql" |
    stdbuf -o0 -e0 sqlite3 -interactive -cmd ".load $extension" "$db" 2>&1 | sed -n '/^sqlite> /,$p' || status=$?
  # The shell exits with 1 when a statement failed (a refused question, say).
  if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then exit "$status"; fi
fi
