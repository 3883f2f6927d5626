#!/usr/bin/env bash
# The wheel test (issue 19, "Python wheel"): the Python suite against the installed wheel,
# in a fresh venv, with the checkout out of reach.
#
#   bash tests/install/wheel_test.sh WHEEL          (scripts/test.sh; a broker and a registry
#                                                    from KELT_KAFKA_ENV and KELT_REGISTRY_ENV)
#
#  1. `python -m venv` in a temporary directory, from the interpreter of $KELT_VENV; pip
#     installs the wheel and the test dependencies (its `test` extra) from the wheels
#     bootstrap.sh keeps ($KELT_CACHE/wheels), binary only: nothing is built, and the venv
#     has no build tool (scikit-build-core, nanobind, setuptools, CMake's Python package).
#  2. In a mount namespace where the checkout, $KELT_VENV and kelt's download cache are
#     empty directories, from a temporary working directory: kelt imports from the venv's
#     site-packages, says VERSION's version (kelt.__version__ and the dist's metadata), and
#     pytest runs python/tests (copied with the fixtures, examples and user guide it reads).
set -euo pipefail
WHEEL="$(realpath "${1:?usage: wheel_test.sh WHEEL}")"
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/paths.sh"
SRC="$KELT_ROOT"
VERSION="$(head -n1 "$SRC/VERSION")"
fail() { echo "wheel_test: FAIL: $*" >&2; exit 1; }
say() { printf '[wheel_test] %s\n' "$*"; }
[[ "$(id -u)" == 0 ]] || fail "run as root: step 2 mounts (unshare --mount)"
[[ -f "$WHEEL" ]] || fail "no wheel $WHEEL"
[[ "$(basename "$WHEEL")" == kelt-"$VERSION"-* ]] || fail "$(basename "$WHEEL") is not kelt $VERSION"
env_value() {  # env_value FILE KEY
  [[ -f "$1" ]] || fail "no env file $1 (scripts/kafka.sh / scripts/registry.sh start)"
  sed -n "s/^$2=//p" "$1" | head -n1
}
BROKERS="${KELT_KAFKA_BOOTSTRAP:-$(env_value "${KELT_KAFKA_ENV:?KELT_KAFKA_ENV or KELT_KAFKA_BOOTSTRAP}" KELT_KAFKA_BOOTSTRAP)}"
REGISTRY_URL="$(env_value "${KELT_REGISTRY_ENV:?KELT_REGISTRY_ENV}" KELT_REGISTRY_URL)"
[[ -n "$BROKERS" && -n "$REGISTRY_URL" ]] || fail "no broker or registry address"
WORK="$(mktemp -d /tmp/kelt-wheel-test.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
echo "KELT_REGISTRY_URL=$REGISTRY_URL" >"$WORK/registry.env"

say "1. a fresh venv; pip install $(basename "$WHEEL")[test] (binary only, no index)"
base_python="$("$KELT_VENV/bin/python" -c 'import sys; print(sys._base_executable)')"
"$base_python" -m venv "$WORK/venv"
PY="$WORK/venv/bin/python"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_CACHE_DIR="$KELT_CACHE/pip"
"$PY" -m pip uninstall --quiet --yes setuptools >/dev/null 2>&1 || true
"$PY" -m pip install --quiet --no-index --only-binary :all: --find-links "$KELT_CACHE/wheels" \
  "$WHEEL[test]" >"$WORK/pip.log" 2>&1 || { tail -n 20 "$WORK/pip.log" >&2; fail "pip install"; }
(cd "$WORK" && "$PY" -I - <<'PY') || fail "the venv has a build tool"
import importlib.util
tools = [m for m in ("scikit_build_core", "nanobind", "setuptools", "cmake", "ninja")
         if importlib.util.find_spec(m)]
assert not tools, f"build tools in the venv: {tools}"
PY
say "   $("$PY" -m pip list --format freeze 2>/dev/null | grep -E '^(kelt|pyarrow|pytest)==' | tr '\n' ' ')"

# The tests and what they read, outside the checkout (conftest.py's REPO is two levels up).
TREE="$WORK/tree"
mkdir -p "$TREE/python" "$TREE/tests" "$TREE/examples" "$TREE/docs" "$TREE/scripts" "$WORK/run"
cp -r "$SRC/python/tests" "$TREE/python/tests"
cp -r "$SRC/tests/fixtures" "$TREE/tests/fixtures"
cp -r "$SRC/examples/python" "$TREE/examples/python"
cp "$SRC/docs/USER_GUIDE.md" "$TREE/docs/"
cp "$SRC/scripts/check_link_order.sh" "$TREE/scripts/"

hide=()
for d in "$KELT_VENV" "$KELT_CACHE" "$SRC"; do [[ -d "$d" ]] && hide+=("$(cd "$d" && pwd -P)"); done
say "2. python/tests against the wheel (mount namespace hiding ${hide[*]})"
cat >"$WORK/isolated.sh" <<'EOF2'
# Inside the namespace, clean environment: $1 work dir, $2 version.
set -euo pipefail
fail() { echo "wheel_test: FAIL: $*" >&2; exit 1; }
for hidden in $KELT_HIDDEN; do
  [[ -z "$(ls -A "$hidden" 2>/dev/null)" ]] || fail "$hidden is still visible"
done
cd "$1/run"
"$1/venv/bin/python" - "$1" "$2" <<'PY' || fail "kelt from the wheel"
import importlib.metadata, sys
import kelt
work, version = sys.argv[1], sys.argv[2]
assert kelt.__file__.startswith(f"{work}/venv/"), kelt.__file__
assert kelt.__version__ == version, (kelt.__version__, version)
assert importlib.metadata.version("kelt") == version, importlib.metadata.version("kelt")
print(f"[wheel_test]    kelt {kelt.__version__} from {kelt.__file__.removeprefix(work + '/')}")
PY
"$1/venv/bin/python" -m pytest -q -p no:cacheprovider "$1/tree/python/tests"
EOF2
unshare --mount --propagation private bash -c '
  set -e
  for d in $1; do mount -t tmpfs none "$d"; done
  exec env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$2/run" KELT_HIDDEN="$1" \
    KELT_KAFKA_BOOTSTRAP="$4" KELT_REGISTRY_ENV="$2/registry.env" \
    bash "$2/isolated.sh" "$2" "$3"' _ "${hide[*]}" "$WORK" "$VERSION" "$BROKERS"
say "passed"
