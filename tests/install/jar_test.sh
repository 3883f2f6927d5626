#!/usr/bin/env bash
# The jar test (issue 19, "Java jar"): what a Java user gets from the kelt jar alone.
#
#   bash tests/install/jar_test.sh JAR DEPS_DIR
#     JAR       made by `mvn package -Dkelt.native.dir=DIR` (java/stage_native.sh makes DIR)
#     DEPS_DIR  its Maven dependencies of runtime scope (mvn dependency:copy-dependencies
#               -DincludeScope=runtime; scripts/test.sh runs both in one mvn)
#   A broker from KELT_KAFKA_ENV or KELT_KAFKA_BOOTSTRAP.
#
#  1. The jar carries META-INF/native/linux-x86_64/: libkelt.so, the libraries it needs that
#     a plain Debian system lacks (kelt/: pyarrow's Arrow), and `files`, their list; every
#     RUNPATH is $ORIGIN-relative, and every library the set needs is in it or is the C/C++
#     runtime every Debian system has (glibc's libraries, libstdc++, libgcc_s, zlib).
#  2. The jar and its dependencies (org.json) copied to a temporary directory;
#     tests/install/jar/JarScenario.java compiled against them.
#  3. In a mount namespace where the checkout, the venv, kelt's download cache and ~/.m2 are
#     empty directories, from a temporary working directory, with a clean environment (no
#     RDP_JVM_SYS, no -Dkelt.library): a JVM with only the jar and its dependencies on the
#     classpath runs the tri-language scenario's Java leg (tests/install/jar/JarScenario.java)
#     on the sample's first $ROWS CSV rows (the Java suite's UberScenarioTest runs all 3,000
#     from the build tree): one DataSet each exported, one window polled and landed, every
#     field compared; libkelt.so comes from the jar
#     and its extracted copy is deleted again. A JVM with RDP_JVM_SYS naming a missing file
#     fails naming that variable: the explicit setting goes before the jar's library.
set -euo pipefail
JAR="$(realpath "${1:?usage: jar_test.sh JAR DEPS_DIR}")"
DEPS="$(realpath "${2:?usage: jar_test.sh JAR DEPS_DIR}")"
ROWS="${KELT_JAR_TEST_ROWS:-500}"
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/paths.sh"
SRC="$KELT_ROOT"
VERSION="$(head -n1 "$SRC/VERSION")"
fail() { echo "jar_test: FAIL: $*" >&2; exit 1; }
say() { printf '[jar_test] %s\n' "$*"; }
[[ "$(id -u)" == 0 ]] || fail "run as root: step 3 mounts (unshare --mount)"
[[ "$(basename "$JAR")" == "kelt-$VERSION.jar" ]] || fail "$(basename "$JAR") is not kelt-$VERSION.jar"
JAVA_HOME="${KELT_JAVA25_HOME:?no Java 25 JDK (KELT_JAVA25_HOME)}"
if [[ -n "${KELT_KAFKA_BOOTSTRAP:-}" ]]; then
  BROKERS="$KELT_KAFKA_BOOTSTRAP"
else
  BROKERS="$(sed -n 's/^KELT_KAFKA_BOOTSTRAP=//p' "${KELT_KAFKA_ENV:?KELT_KAFKA_ENV or KELT_KAFKA_BOOTSTRAP}")"
fi
[[ -n "$BROKERS" ]] || fail "no broker address"
WORK="$(mktemp -d /tmp/kelt-jar-test.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
native=META-INF/native/linux-x86_64

say "1. $(basename "$JAR") ($(du -h "$JAR" | cut -f1)): $native/"
mkdir -p "$WORK/inspect"
(cd "$WORK/inspect" && "$JAVA_HOME/bin/jar" xf "$JAR" "$native") || fail "jar xf $native"
N="$WORK/inspect/$native"
[[ -f "$N/files" && -f "$N/libkelt.so" ]] || fail "the jar has no $native/files or libkelt.so"
[[ "$(cd "$N" && find . -type f ! -name files | sed 's|^\./||' | sort)" == "$(sort "$N/files")" ]] \
  || fail "$native/files does not list exactly the jar's native files"
grep -q '^kelt/libarrow\.so\.[0-9]*$' "$N/files" || fail "the jar carries no Arrow (kelt/libarrow.so.N)"
while read -r f; do
  while read -r path; do
    IFS=: read -ra entries <<<"$path"
    for e in "${entries[@]}"; do
      [[ "$e" == '$ORIGIN'* ]] || fail "$f has RPATH entry $e (not \$ORIGIN)"
    done
  done < <(readelf -d "$N/$f" | sed -nE 's/.*\((RPATH|RUNPATH)\).*\[(.*)\]/\2/p')
done <"$N/files"
while read -r name path; do
  [[ "$path" == "$N"/* ]] && continue
  case "$name" in
    linux-vdso.so.* | ld-linux-x86-64.so.* | libc.so.* | libm.so.* | libdl.so.* | \
      libpthread.so.* | librt.so.* | libresolv.so.* | libstdc++.so.* | libgcc_s.so.* | \
      libz.so.*) ;;
    *) fail "libkelt.so from the jar loads $name from $path: not in the jar, not a base library" ;;
  esac
done < <(env -i ldd "$N/libkelt.so" | sed -nE 's/^\s*(\S+) => (\S+|not found).*/\1 \2/p')
say "   $(wc -l <"$N/files") native files, $(du -sh "$N" | cut -f1) unpacked; RUNPATH $(readelf -d "$N/libkelt.so" | sed -nE 's/.*\(RUNPATH\).*\[(.*)\]/\1/p')"

say "2. the jar and its dependencies: $(cd "$DEPS" && ls | tr '\n' ' ')"
mkdir -p "$WORK/app/lib" "$WORK/app/classes" "$WORK/run" "$WORK/tmp"
cp "$JAR" "$WORK/app/"
cp "$DEPS"/*.jar "$WORK/app/lib/"
head -n "$((ROWS + 1))" "$SRC/tests/fixtures/uber/uber_apr14_sample.csv" >"$WORK/app/uber.csv"
cp "$SRC/tests/fixtures/uber/landing_schema.json" "$WORK/app/"
"$JAVA_HOME/bin/javac" -cp "$WORK/app/$(basename "$JAR"):$WORK/app/lib/*" -d "$WORK/app/classes" \
  "$SRC/tests/install/jar/JarScenario.java" || fail "javac JarScenario.java"

hide=()
for d in "$KELT_VENV" "$KELT_CACHE" "$HOME/.m2" "$SRC"; do [[ -d "$d" ]] && hide+=("$(cd "$d" && pwd -P)"); done
say "3. a JVM with the jar and org.json only (mount namespace hiding ${hide[*]})"
cat >"$WORK/isolated.sh" <<'EOF2'
# Inside the namespace, clean environment: $1 work dir, $2 java home, $3 brokers.
set -euo pipefail
fail() { echo "jar_test: FAIL: $*" >&2; exit 1; }
for hidden in $KELT_HIDDEN; do
  [[ -z "$(ls -A "$hidden" 2>/dev/null)" ]] || fail "$hidden is still visible"
done
A="$1/app"
cd "$1/run"
cp="$A/$(basename "$(ls "$A"/kelt-*.jar)"):$A/lib/*:$A/classes"
java=("$2/bin/java" --enable-native-access=ALL-UNNAMED -Djava.io.tmpdir="$1/tmp" -cp "$cp")
"${java[@]}" JarScenario "$3" "$A/uber.csv" "$A/landing_schema.json" \
  || fail "the scenario from the jar"
[[ -z "$(ls -A "$1/tmp")" ]] || fail "the extracted library was left in java.io.tmpdir: $(ls "$1/tmp")"
# The explicit variable goes first: a missing file it names is an error, not a fallback.
if out="$(RDP_JVM_SYS="$1/missing/libkelt.so" "${java[@]}" JarScenario "$3" "$A/uber.csv" \
            "$A/landing_schema.json" 2>&1)"; then
  fail "RDP_JVM_SYS naming a missing file did not fail"
fi
grep -q "kelt native library not found: $1/missing/libkelt.so (from the environment variable RDP_JVM_SYS)" \
  <<<"$out" || { printf '%s\n' "$out" | tail -n 5 >&2; fail "RDP_JVM_SYS: unexpected error"; }
echo "[jar_test]    RDP_JVM_SYS naming a missing file: refused, naming the variable"
EOF2
unshare --mount --propagation private bash -c '
  set -e
  for d in $1; do mount -t tmpfs none "$d"; done
  exec env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$2/run" KELT_HIDDEN="$1" \
    bash "$2/isolated.sh" "$2" "$3" "$4"' _ "${hide[*]}" "$WORK" "$JAVA_HOME" "$BROKERS"
say "passed"
