#!/usr/bin/env bash
# Fail unless every artifact states the version in VERSION, kelt's one version number:
# the wheel (pyproject.toml and kelt.__version__ read it), the jar (java/pom.xml), the C++
# library, CLI and C ABI (CMake reads VERSION itself; kelt/version.h is generated).
#   bash tests/install/check_versions.sh SOURCE_DIR [GENERATED_VERSION_H]
set -euo pipefail
src="$1"
version="$(head -n1 "$src/VERSION")"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "VERSION: '$version' is not X.Y.Z" >&2; exit 1; }
status=0
check() {  # check FILE FOUND
  if [[ "$2" != "$version" ]]; then
    echo "$1 says version '$2', VERSION says $version" >&2
    status=1
  fi
}
# The wheel takes its version from VERSION (pyproject.toml's [[tool.dynamic-metadata]],
# scikit-build-core's regex provider) and
# kelt.__version__ from the module, which compiles kelt/version.h in: no copy to drift.
if grep -qE '^version *=' "$src/pyproject.toml" \
   || ! grep -q '^dynamic = \["version"\]' "$src/pyproject.toml" \
   || ! grep -q '^input = "VERSION"' "$src/pyproject.toml"; then
  echo "pyproject.toml: the version must be dynamic, read from VERSION" >&2
  status=1
fi
if grep -qE '^__version__ *=' "$src/python/kelt/__init__.py" \
   || ! grep -q '^from ._kelt import __version__' "$src/python/kelt/__init__.py"; then
  echo "python/kelt/__init__.py: __version__ must come from the native module" >&2
  status=1
fi
# The project's own <version>: the first one, before <properties>, <dependencies>, <build>.
check java/pom.xml "$(awk '/<dependencies>|<build>|<properties>/ { exit }
  match($0, /<version>[^<]*<\/version>/) { print substr($0, RSTART + 9, RLENGTH - 19); exit }' \
  "$src/java/pom.xml")"
if [[ $# -ge 2 ]]; then
  check "$2" "$(sed -nE 's/^#define KELT_VERSION_STRING "(.*)"/\1/p' "$2")"
fi
[[ $status == 0 ]] && echo "every artifact says $version"
exit $status
