#!/usr/bin/env bash
# Builds QueryPilot, makes a small shop database (demo.db) from sql/shop.sql
# and asks it a few questions in the sqlite3 shell, then shows agent_runs and
# agent_attempts.
#
# With a model configured (QUERYPILOT_BASE_URL, OPENAI_API_KEY, ...), the demo
# uses it. Without one, it says how to configure one and runs against
# QueryPilot's scripted test model on 127.0.0.1 instead.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Ninja for new build trees: it compiles a target's sources as soon as they
# can be, not after the libraries it links have been archived.
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" --target querypilot querypilot-scripted-llm

rm -f demo.db
sqlite3 demo.db < sql/shop.sql

configured=""
for v in QUERYPILOT_BASE_URL OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL; do
  if [ -n "${!v:-}" ]; then configured=$v; fi
done

server_pid=""
cleanup() { if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT

if [ -z "$configured" ]; then
  cat <<'MSG'
No model endpoint is configured. To use a real model, set one of:
  export OPENAI_API_KEY=sk-...           (and QUERYPILOT_MODEL=gpt-4o-mini, say)
  export ANTHROPIC_API_KEY=sk-ant-...    (and QUERYPILOT_MODEL=<a Claude model>)
  export QUERYPILOT_BASE_URL=http://127.0.0.1:11434/v1 QUERYPILOT_MODEL=qwen2.5-coder   # Ollama
  export QUERYPILOT_BASE_URL=http://127.0.0.1:8080/v1  QUERYPILOT_MODEL=local           # llama.cpp server
(docs/providers/ has a recipe per provider; scripts/try.sh YOUR.db runs the scripted model
on a database of your own.)

==> This run uses QueryPilot's SCRIPTED TEST MODEL on 127.0.0.1 (canned replies,
    examples/demo_script.json), so you can see the whole loop without one.
MSG
  port_file=$(mktemp)
  "$BUILD_DIR/querypilot-scripted-llm" --script examples/demo_script.json --port-file "$port_file" >/dev/null &
  server_pid=$!
  for _ in $(seq 100); do [ -s "$port_file" ] && break; sleep 0.05; done
  export QUERYPILOT_PROVIDER=openai
  export QUERYPILOT_BASE_URL="http://127.0.0.1:$(cat "$port_file")/v1"
  export QUERYPILOT_MODEL=scripted-test-model
  rm -f "$port_file"
else
  echo "==> Using the model configured by $configured."
fi
echo

status=0
sed -e "s#./build/querypilot#./$BUILD_DIR/querypilot#" -e "/^--/d" examples/demo.sql |
  stdbuf -o0 -e0 sqlite3 -interactive demo.db 2>&1 | sed -n '/^sqlite> /,$p' || status=$?
# The shell exits with 1 when any statement failed; one demo question (the
# DELETE) is refused on purpose, so 1 is the expected end. Anything else is not.
if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then exit "$status"; fi
