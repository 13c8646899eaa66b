#!/usr/bin/env bash
# Formats all of QueryPilot's C and C++ (ext/, agent/, eval/, tests/, fuzz/,
# bench/) with clang-format and the tree's .clang-format. With --check it
# changes nothing and fails, naming each file, where a file differs from
# that format (CI runs it so). With --list it prints the files it covers.
#
# Usage: scripts/format.sh [--check | --list] [file...]
#   With files, only those (of the tree's C and C++) are formatted or checked.
set -euo pipefail
cd "$(dirname "$0")/.."
# Every C and C++ source and header git tracks in these folders.
cpp_files() {
  git ls-files -- \
    'ext/*.cpp' 'ext/*.h' 'ext/*.c' 'agent/*.cpp' 'agent/*.h' 'eval/*.cpp' 'eval/*.h' \
    'tests/*.cpp' 'tests/*.h' 'tests/*.c' 'fuzz/*.cpp' 'fuzz/*.h' 'bench/*.c' 'bench/*.cpp' \
    'bench/*.h'
}
mode=format
case "${1:-}" in
  --check) mode=check; shift ;;
  --list) mode=list; shift ;;
esac
mapfile -t files < <(cpp_files)
if [ $# -gt 0 ]; then
  mapfile -t files < <(printf '%s\n' "${files[@]}" | grep -Fxf <(printf '%s\n' "$@") || true)
fi
if [ "$mode" = list ]; then
  printf '%s\n' "${files[@]}"
  exit 0
fi
scripts/install-deps.sh clang-format
if [ "$mode" = check ]; then
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
elif [ ${#files[@]} -gt 0 ]; then
  clang-format -i "${files[@]}"
fi
