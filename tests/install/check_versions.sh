#!/usr/bin/env bash
# Fail unless every artifact states the version in VERSION, kelt's one version number:
# the wheel (pyproject.toml, python/kelt/__init__.py), the jar (java/pom.xml), the C++
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
check pyproject.toml "$(sed -nE 's/^version = "(.*)"/\1/p' "$src/pyproject.toml")"
check python/kelt/__init__.py \
  "$(sed -nE 's/^__version__ = "(.*)"/\1/p' "$src/python/kelt/__init__.py")"
# The project's own <version>: the first one, before <properties>, <dependencies>, <build>.
check java/pom.xml "$(awk '/<dependencies>|<build>|<properties>/ { exit }
  match($0, /<version>[^<]*<\/version>/) { print substr($0, RSTART + 9, RLENGTH - 19); exit }' \
  "$src/java/pom.xml")"
if [[ $# -ge 2 ]]; then
  check "$2" "$(sed -nE 's/^#define KELT_VERSION_STRING "(.*)"/\1/p' "$2")"
fi
[[ $status == 0 ]] && echo "every artifact says $version"
exit $status
