#!/usr/bin/env bash
# Formats QueryPilot's C++ (ext/ and agent/) with clang-format and the tree's
# .clang-format. With --check it changes nothing and fails, naming each file,
# where a file differs from that format (CI runs it so).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh clang-format
mapfile -t files < <(git ls-files 'ext/*.cpp' 'ext/*.h' 'agent/*.cpp' 'agent/*.h')
if [ "${1:-}" = "--check" ]; then
  differ=()
  for f in "${files[@]}"; do
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
      differ+=("$f")
    fi
  done
  if [ ${#differ[@]} -gt 0 ]; then
    echo "error: these files differ from .clang-format (run scripts/format.sh):" >&2
    printf '  %s\n' "${differ[@]}" >&2
    exit 1
  fi
  echo "format: ${#files[@]} files as .clang-format wants them"
else
  clang-format -i "${files[@]}"
fi
