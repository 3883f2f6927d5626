#!/usr/bin/env bash
# -DKELT_RDKAFKA=system refuses a librdkafka older than the minimum at configure time, with
# a message naming both versions, and accepts the minimum (pkg-config files of fake
# versions stand in for the system library; only configure runs).
# Usage: tests/build/rdkafka_min_version_test.sh SOURCE_DIR PYTHON
set -euo pipefail
src="$1" python="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
configure() {   # configure VERSION: configure against a fake rdkafka VERSION; print the output
  mkdir -p "$tmp/pc-$1"
  printf 'Name: librdkafka\nDescription: stand-in\nVersion: %s\nLibs: -lrdkafka\nCflags:\n' \
    "$1" >"$tmp/pc-$1/rdkafka.pc"
  PKG_CONFIG_PATH="$tmp/pc-$1" cmake -S "$src" -B "$tmp/build-$1" -G Ninja \
    -DKELT_RDKAFKA=system -DKELT_PYTHON="$python" -DKELT_BUILD_TESTS=OFF \
    -DKELT_BUILD_BENCH=OFF 2>&1
}
if out="$(configure 1.9.0)"; then
  echo "librdkafka 1.9.0 was accepted" >&2; exit 1
fi
grep -q "the system librdkafka is 1.9.0; kelt needs at least 2.0.2" <<<"$out" \
  || { echo "no clear refusal:" >&2; echo "$out" >&2; exit 1; }
out="$(configure 2.0.2)" || { echo "librdkafka 2.0.2 was refused:" >&2; echo "$out" >&2; exit 1; }
grep -q "librdkafka 2.0.2 from the system" <<<"$out" || { echo "$out" >&2; exit 1; }
echo "1.9.0 refused, 2.0.2 accepted"
