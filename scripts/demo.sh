#!/usr/bin/env bash
# Builds QueryPilot, makes a small shop database (demo.db) from sql/shop.sql
# and asks it a few questions in the sqlite3 shell, then shows agent_runs and
# agent_attempts.
#
# With a model configured (QUERYPILOT_BASE_URL, OPENAI_API_KEY, ...), the demo
# uses it. Without one, it says how to configure one and runs against
# QueryPilot's scripted test model on 127.0.0.1 instead. A provider's error (a
# rejected key, a wrong URL) ends the demo at the first question that meets it,
# with its message and exit status 1: every later question would meet it too.
#
# BUILD_DIR (default build) names the build tree; QP_SKIP_BUILD=1 uses the
# build already there. DEMO_DB (default demo.db) names the database it makes.
# The demo ends with a chart of the revenue per category, written beside it:
# demo-chart.html (agent_chart_html) where npm's vega scripts are found, else
# its Vega-Lite specification, demo-chart.vl.json (agent_chart).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
DEMO_DB=${DEMO_DB:-demo.db}
if [ "${QP_SKIP_BUILD:-0}" != 1 ]; then
  scripts/install-deps.sh
  # Ninja for new build trees: it compiles a target's sources as soon as they
  # can be, not after the libraries it links have been archived.
  export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD_DIR" -j"$(nproc)" --target querypilot querypilot-scripted-llm
fi

rm -f "$DEMO_DB"
sqlite3 "$DEMO_DB" < sql/shop.sql

configured=""
for v in QUERYPILOT_BASE_URL OPENAI_API_KEY OPENAI_BASE_URL ANTHROPIC_API_KEY ANTHROPIC_BASE_URL; do
  if [ -n "${!v:-}" ]; then configured=$v; fi
done

server_pid=""
work=$(mktemp -d)
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
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
  port_file="$work/port"
  "$BUILD_DIR/querypilot-scripted-llm" --script examples/demo_script.json --port-file "$port_file" >/dev/null &
  server_pid=$!
  for _ in $(seq 100); do [ -s "$port_file" ] && break; sleep 0.05; done
  export QUERYPILOT_PROVIDER=openai
  export QUERYPILOT_BASE_URL="http://127.0.0.1:$(cat "$port_file")/v1"
  export QUERYPILOT_MODEL=scripted-test-model
else
  echo "==> Using the model configured by $configured."
fi
echo

# After each statement, a guard (its lines carry the name qp-demo-guard and are
# not shown) looks at the last run's status in agent_runs: a provider's error
# (or a model not configured) writes ".exit 3" into the file the guard then
# reads, and the run's error beside it.
guard="$work/qp-demo-guard.sql"
message="$work/qp-demo-guard.txt"
: >"$guard"
check="SELECT NULL FROM agent_runs WHERE id = (SELECT max(id) FROM agent_runs) AND CASE WHEN status IN ('provider_error', 'not_configured') THEN writefile('$guard', '.exit 3') + writefile('$message', error) < 0 ELSE 0 END;"
status=0
case "$BUILD_DIR" in
  /*) extension="$BUILD_DIR/querypilot" ;;
  *) extension="./$BUILD_DIR/querypilot" ;;
esac
# The chart: the lines that write it carry qp-demo-guard and are not shown.
chart_base="$(dirname "$DEMO_DB")/demo-chart"
rm -f "$chart_base.html" "$chart_base.vl.json"
chart_run="(SELECT max(id) FROM agent_runs WHERE question = 'What is the revenue per product category?' AND status = 'ok')"
chart_lines=".mode list
.once $work/qp-demo-guard-chart.html
SELECT agent_chart_html($chart_run); -- qp-demo-guard
.once $work/qp-demo-guard-chart.vl.json
SELECT agent_chart($chart_run); -- qp-demo-guard"
{ sed -e "s#\./build/querypilot#$extension#" -e "/^--/d" -e "s#;\$#;\n$check\n.read $guard#" examples/demo.sql
  printf '%s\n' "$chart_lines"; } |
  stdbuf -o0 -e0 sqlite3 -interactive "$DEMO_DB" 2>&1 |
  sed -n -e '/qp-demo-guard/d' -e '/agent_chart/d' -e '/^sqlite> /,$p' || status=$?
if [ "$status" -eq 3 ]; then
  echo >&2
  echo "scripts/demo.sh: stopped at the first provider error (every later question would meet it too):" >&2
  echo "  $(cat "$message")" >&2
  echo "Check the key, the base URL and the model: docs/providers/ has a recipe per provider." >&2
  exit 1
fi
# The shell exits with 1 when any statement failed; one demo question (the
# DELETE) is refused on purpose, so 1 is the expected end. Anything else is not.
if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then exit "$status"; fi
echo
if [ -s "$work/qp-demo-guard-chart.html" ]; then
  mv "$work/qp-demo-guard-chart.html" "$chart_base.html"
  echo "==> The revenue per category, as a chart: $chart_base.html (open it in a browser; it fetches nothing)."
elif [ -s "$work/qp-demo-guard-chart.vl.json" ]; then
  mv "$work/qp-demo-guard-chart.vl.json" "$chart_base.vl.json"
  echo "==> The revenue per category, as a Vega-Lite chart: $chart_base.vl.json. For a page that draws it,"
  echo "    install npm's vega scripts (docs/functions/agent_chart_html.md): npm install vega@5 vega-lite@5 vega-embed@6"
fi
