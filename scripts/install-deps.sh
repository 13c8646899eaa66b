#!/usr/bin/env bash
# Installs, from Debian's packages, whatever QueryPilot needs to build and test
# that this machine lacks. Runs apt-get only when something is missing.
# Arguments name extra packages (scripts/fuzz.sh asks for clang this way).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libsqlite3-dev sqlite3
  nlohmann-json3-dev libcurl4-openssl-dev libfmt-dev
  googletest libgtest-dev libcpp-httplib-dev
  python3 coreutils time valgrind
  python3-build python3-setuptools python3-wheel python3-venv python3-pip
  sqlite-utils
  "$@"
)
# The dqlite cluster test (tests/e2e/test_dqlite.py): dqlite-demo and the
# dqlite shell.
PACKAGES+=(go-dqlite libdqlite0)
# The Node.js client tests use npm's better-sqlite3 and libsql: Debian's
# nodejs and npm, unless this machine already has a node and an npm.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  PACKAGES+=(nodejs npm)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "Installing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "error: these Debian packages are missing and I am not root: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
