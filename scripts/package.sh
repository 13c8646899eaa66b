#!/usr/bin/env bash
# Builds QueryPilot's Python wheel and npm tarball from this tree, offline:
#   build/packages/querypilot-<version>-py3-none-<platform>.whl  (pip install --no-index <wheel>)
#   build/packages/querypilot-<version>.tgz                      (npm install <tarball>)
# Each carries the querypilot.so built here. Uses Debian's python3-build,
# -setuptools, -wheel and npm's own `npm pack`; nothing is downloaded. Each
# package's version is the library's (SELECT querypilot_version()).
#
# BUILD_DIR (default build) names the build tree; QP_SKIP_BUILD=1 packages
# the library already in it.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
if [ "${QP_SKIP_BUILD:-0}" != 1 ]; then
  scripts/install-deps.sh
  export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD_DIR" -j"$(nproc)" --target querypilot
fi
so="$BUILD_DIR/querypilot.so"
[ -f "$so" ] || { echo "scripts/package.sh: no $so (build it first)" >&2; exit 1; }
# One version for all: what the library says (querypilot_version(), which
# cmake/version.cmake wrote into the build): VERSION for a release, and
# VERSION+dev.g<commit> (VERSION+dev outside git) for work past it. The same
# text is a PEP 440 local version for the wheel and a Debian upstream version
# for the .deb (CMakeLists.txt), both sorting after the release they start
# from, and semver build metadata for npm, which compares as that release.
header="$BUILD_DIR/generated/querypilot_version.h"
version=$(sed -n 's/^#define QUERYPILOT_VERSION "\(.*\)"$/\1/p' "$header" 2>/dev/null || true)
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(\+dev(\.g[0-9a-f]+)?)?$ ]] ||
  { echo "scripts/package.sh: no version in $header (build it first)" >&2; exit 1; }
out="$BUILD_DIR/packages"
stage="$out/stage"
rm -rf "$stage"
mkdir -p "$stage" "$out"
out=$(cd "$out" && pwd)
stage="$out/stage"

# Python: the package with the library beside its __init__.py.
cp -r packaging/python "$stage/python"
cp LICENSE "$stage/python/LICENSE"
sed -i "s/@QUERYPILOT_VERSION@/$version/" "$stage/python/querypilot/__init__.py"
# The packaged library without its debugging sections.
strip --strip-unneeded -o "$stage/querypilot.so" "$so"
cp "$stage/querypilot.so" "$stage/python/querypilot/querypilot.so"
rm -f "$out"/querypilot-*.whl
(cd "$stage/python" && /usr/bin/python3 -m build --wheel --no-isolation --outdir "$out" >"$stage/python-build.log" 2>&1) ||
  { cat "$stage/python-build.log" >&2; exit 1; }

# npm: the package with the library in lib/.
cp -r packaging/npm "$stage/npm"
cp LICENSE "$stage/npm/LICENSE"
# npm's cpu field: the architecture the library was built for (Node's names).
case "$(readelf -h "$so" | sed -n 's/^ *Machine: *//p')" in
  *X86-64*) cpu=x64 ;;
  AArch64) cpu=arm64 ;;
  *) echo "scripts/package.sh: $so is for an architecture the npm package does not name" >&2; exit 1 ;;
esac
sed -i -e "s/@QUERYPILOT_VERSION@/$version/" -e "s/@QUERYPILOT_NODE_CPU@/$cpu/" "$stage/npm/package.json"
mkdir -p "$stage/npm/lib"
cp "$stage/querypilot.so" "$stage/npm/lib/querypilot.so"
rm -f "$out"/querypilot-*.tgz
(cd "$stage/npm" && npm pack --silent --pack-destination "$out" >/dev/null)

ls "$out"/querypilot-*.whl "$out"/querypilot-*.tgz
