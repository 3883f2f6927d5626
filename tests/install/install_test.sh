#!/usr/bin/env bash
# The install test (issue 19, "CLI and C/C++ SDK"): what a user gets from the artifacts,
# checked with the checkout and the build tree out of reach.
#
#   bash tests/install/install_test.sh BUILD_DIR       (a release build; scripts/test.sh)
#
#  1. cmake --install BUILD_DIR into a temporary prefix; the layout is complete.
#  2. Every ELF file of the install finds its libraries through $ORIGIN RPATHs only, and
#     resolves none in the build tree, the checkout, the venv or kelt's download cache.
#  3. In a mount namespace where the checkout, the build tree, the venv whose pyarrow the
#     build used and kelt's download cache are empty directories, from the prefix moved
#     elsewhere: `kelt --version` names kelt's
#     version (VERSION) and librdkafka's, Arrow's and DuckDB's; a separate CMake project
#     builds the C example, a C++ example and an ABI check against the install with
#     find_package(kelt), and again with pkg-config, and runs them; `kelt demo` lands
#     the sample CSV from a local broker (scripts/kafka.sh, started outside) and queries it.
#  4. CPack makes the .tar.gz and the .deb; the unpacked tarball's `kelt --version`
#     answers; the .deb installs with dpkg -i, its `kelt --version` answers, and dpkg -P
#     removes it (a failure when kelt is already installed by dpkg: the test does not
#     replace a user's package).
# Every missing piece is a failure, never a skip.
set -euo pipefail
BUILD="$(cd "${1:?usage: install_test.sh BUILD_DIR}" && pwd -P)"
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/paths.sh"
SRC="$KELT_ROOT"
VERSION="$(head -n1 "$SRC/VERSION")"
WORK="$(mktemp -d /tmp/kelt-install-test.XXXXXX)"
PREFIX="$WORK/prefix"
KAFKA_DIR="$WORK/kafka"
cleanup() {
  bash "$SRC/scripts/kafka.sh" stop --dir "$KAFKA_DIR" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }
say() { printf '[install_test] %s\n' "$*"; }
# Steps 3 and 4 mount tmpfs in a private namespace and run dpkg -i: say so up front.
[[ "$(id -u)" == 0 ]] || fail "run as root: step 3 mounts (unshare --mount) and step 4 runs dpkg -i"

say "1. cmake --install $BUILD --prefix $PREFIX"
cmake --install "$BUILD" --prefix "$PREFIX" --strip >"$WORK/install.log" \
  || { tail -n 20 "$WORK/install.log" >&2; fail "cmake --install"; }
for f in bin/kelt lib/libkelt.so lib/libkelt_cxx.so include/kelt.h include/kelt/version.h \
         include/kelt/load.h include/kelt/status.h lib/cmake/kelt/kelt-config.cmake \
         lib/cmake/kelt/kelt-config-version.cmake lib/pkgconfig/kelt.pc \
         lib/pkgconfig/kelt-cxx.pc share/kelt/uber_apr14_sample.csv \
         share/kelt/load_records.c share/kelt/byo_load.cc; do
  [[ -e "$PREFIX/$f" ]] || fail "the install has no $f"
done
grep -q "#define KELT_VERSION_STRING \"$VERSION\"" "$PREFIX/include/kelt/version.h" \
  || fail "include/kelt/version.h does not say $VERSION"
say "   $(find "$PREFIX" -type f | wc -l) files, $(du -sh "$PREFIX" | cut -f1)"

# What must be out of reach of the installed files: the checkout, the build tree, the venv
# whose pyarrow provided Arrow (KELT_PYTHON in the build's cache) and the download cache.
kelt_python="$(sed -n 's/^KELT_PYTHON:[A-Z]*=//p' "$BUILD/CMakeCache.txt")"
ARROW_VENV="$(cd "$(dirname "$kelt_python")/.." && pwd -P)" || fail "no venv for $kelt_python"
hide=()  # inner directories first: a tmpfs over the checkout hides the mount points in it
for d in "$BUILD" "$ARROW_VENV" "$KELT_CACHE" "$SRC"; do
  [[ -d "$d" ]] && hide+=("$(cd "$d" && pwd -P)")
done

say "2. RPATHs and library resolution of every ELF file"
mapfile -t elfs < <(find "$PREFIX" -type f \( -name '*.so*' -o -path '*/bin/*' \))
((${#elfs[@]} >= 3)) || fail "found only ${#elfs[@]} ELF files"
for elf in "${elfs[@]}"; do
  dyn="$(readelf -d "$elf")" || fail "readelf $elf"
  while read -r path; do
    [[ -z "$path" ]] && continue
    IFS=: read -ra entries <<<"$path"
    for e in "${entries[@]}"; do
      [[ "$e" == '$ORIGIN'* ]] || fail "${elf#"$PREFIX"/} has RPATH entry $e (not \$ORIGIN)"
    done
  done < <(sed -nE 's/.*\((RPATH|RUNPATH)\).*\[(.*)\]/\2/p' <<<"$dyn")
  resolved="$(env -i ldd "$elf")" || fail "ldd $elf"
  if grep -E "not found|$SRC/|$BUILD/|$ARROW_VENV/|$KELT_CACHE/|\.venv" <<<"$resolved"; then
    fail "${elf#"$PREFIX"/} resolves a library outside the install and the system"
  fi
done
# Sonames from VERSION (CMakeLists.txt): libkelt.so.<major>; libkelt_cxx.so.<major>.<minor>
# while 0.x, .<major> from 1.0. The unversioned names are links for the linker.
IFS=. read -r major minor _ <<<"$VERSION"
cxx_so="$major"; [[ "$major" == 0 ]] && cxx_so="$major.$minor"
for want in "libkelt.so:libkelt.so.$major" "libkelt_cxx.so:libkelt_cxx.so.$cxx_so"; do
  lib="${want%%:*}" soname="${want#*:}"
  got="$(readelf -d "$PREFIX/lib/$lib" | sed -nE 's/.*\(SONAME\).*\[(.*)\]/\1/p')"
  [[ "$got" == "$soname" ]] || fail "lib/$lib has soname '$got', expected $soname"
  [[ -L "$PREFIX/lib/$lib" && -e "$PREFIX/lib/$soname" && -f "$PREFIX/lib/$lib.$VERSION" ]] \
    || fail "lib/$lib: expected the links $lib -> $soname -> $lib.$VERSION"
done
say "   sonames libkelt.so.$major and libkelt_cxx.so.$cxx_so"
kelt_libs="$(env -i ldd "$PREFIX/bin/kelt")"
for lib in libarrow libparquet; do
  grep -q "$lib\.so.* => $PREFIX/bin/\.\./lib/kelt/" <<<"$kelt_libs" \
    || fail "bin/kelt does not load the installed $lib"
done

say "3. the install on its own (mount namespace hiding ${hide[*]})"
# A broker for `kelt demo`, started from the checkout before it is hidden.
bootstrap_line="$(bash "$SRC/scripts/kafka.sh" start --dir "$KAFKA_DIR" 2>"$WORK/kafka.log")" \
  || { tail -n 20 "$WORK/kafka.log" >&2; fail "the broker did not start"; }
BROKERS="${bootstrap_line#KELT_KAFKA_BOOTSTRAP=}"
KELT_CLI="$BUILD/cli/kelt" bash "$SRC/scripts/kafka.sh" create-topic rides 3 \
  --dir "$KAFKA_DIR" >/dev/null 2>>"$WORK/kafka.log" \
  || { tail -n 20 "$WORK/kafka.log" >&2; fail "creating the topic failed"; }
cp -r "$SRC/tests/install/consumer" "$WORK/consumer"
cat >"$WORK/isolated.sh" <<'EOF'
# Runs inside the namespace with a clean environment: $1 prefix, $2 work dir,
# $3 version, $4 brokers.
set -euo pipefail
P="$1/moved"
W="$2"
mv "$1/prefix" "$P"   # relocated: nothing may depend on where it was installed
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }
say() { printf '[install_test] %s\n' "$*"; }
for hidden in $KELT_HIDDEN; do
  [[ -z "$(ls -A "$hidden" 2>/dev/null)" ]] || fail "$hidden is still visible"
done

version_out="$("$P/bin/kelt" --version)" || fail "kelt --version failed"
printf '%s\n' "$version_out" | sed 's/^/   /'
[[ "$(head -n1 <<<"$version_out")" == "kelt $3" ]] || fail "kelt --version: not kelt $3"
for dep in librdkafka Arrow DuckDB; do
  grep -Eq "^$dep v?[0-9]+\.[0-9]+\.[0-9]+" <<<"$version_out" \
    || fail "kelt --version names no $dep version"
done

check_examples() {  # check_examples DIR HOW: run the three programs built in DIR
  local out
  out="$("$1/abi_version")" || fail "$2: abi_version"
  grep -q "^kelt_version $3 " <<<"$out" || fail "$2: abi_version said: $out"
  out="$("$1/load_records")" || fail "$2: load_records"
  grep -q '"rows":\[\[{"Int64":1},{"Utf8":"click"},{"Int64":1}\]\]' <<<"$out" \
    || fail "$2: load_records printed: $out"
  grep -q 'INVALID (retriable: 0): kafka group_id must not be empty' <<<"$out" \
    || fail "$2: load_records printed no consumer error: $out"
  out="$("$1/byo_load")" || fail "$2: byo_load"
  grep -q '"click"' <<<"$out" || fail "$2: byo_load printed: $out"
  say "   $2: abi_version, load_records (C) and byo_load (C++) built and ran"
}
cmake -S "$W/consumer" -B "$W/consumer-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$P" -DKELT_EXAMPLES="$P/share/kelt" \
  -DKELT_EXPECTED_VERSION="$3" >"$W/consumer.log" 2>&1 \
  || { tail -n 30 "$W/consumer.log" >&2; fail "find_package(kelt): configure"; }
cmake --build "$W/consumer-build" >>"$W/consumer.log" 2>&1 \
  || { tail -n 30 "$W/consumer.log" >&2; fail "find_package(kelt): build"; }
check_examples "$W/consumer-build" "find_package(kelt)" "$3"

export PKG_CONFIG_PATH="$P/lib/pkgconfig"
[[ "$(pkg-config --modversion kelt)" == "$3" ]] || fail "pkg-config kelt: not version $3"
mkdir -p "$W/pc"
rpath="-Wl,-rpath,$P/lib"
# shellcheck disable=SC2046  # pkg-config's flags are words
cc -o "$W/pc/load_records" "$P/share/kelt/load_records.c" $(pkg-config --cflags --libs kelt) \
  "$rpath" || fail "pkg-config kelt: load_records"
# shellcheck disable=SC2046
cc -o "$W/pc/abi_version" "$W/consumer/abi_version.c" $(pkg-config --cflags --libs kelt) \
  "$rpath" || fail "pkg-config kelt: abi_version"
# shellcheck disable=SC2046
c++ -o "$W/pc/byo_load" "$P/share/kelt/byo_load.cc" $(pkg-config --cflags --libs kelt-cxx) \
  "$rpath" "-Wl,-rpath,$P/lib/kelt" || fail "pkg-config kelt-cxx: byo_load"
check_examples "$W/pc" "pkg-config" "$3"

demo_out="$(cd "$W" && "$P/bin/kelt" demo --brokers "$4" --topic rides \
  --csv "$P/share/kelt/uber_apr14_sample.csv" --rows 500 --dir "$W/demo" \
  --progress none 2>&1)" || { printf '%s\n' "$demo_out" >&2; fail "kelt demo"; }
grep -q '"rows":500,"bad_records":0,"caught_up":true' <<<"$demo_out" \
  || { printf '%s\n' "$demo_out" >&2; fail "kelt demo: not every row landed"; }
grep -q '^5 rows$' <<<"$demo_out" || { printf '%s\n' "$demo_out" >&2; fail "kelt demo: no SQL answer"; }
say "   kelt demo: 500 rows landed from $4 and queried"
EOF
# A private mount namespace: an empty tmpfs over each of them, and a clean environment.
unshare --mount --propagation private bash -c '
  set -e
  for d in $1; do mount -t tmpfs none "$d"; done
  exec env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$2" KELT_HIDDEN="$1" \
    bash "$2/isolated.sh" "$2" "$2" "$3" "$4"' _ "${hide[*]}" "$WORK" "$VERSION" "$BROKERS"
bash "$SRC/scripts/kafka.sh" stop --dir "$KAFKA_DIR" >/dev/null 2>&1 || true

say "4. CPack: .tar.gz and .deb"
rm -rf "$BUILD/packages"
(cd "$BUILD" && cpack -G "TGZ;DEB" >"$WORK/cpack.log" 2>&1) \
  || { tail -n 30 "$WORK/cpack.log" >&2; fail "cpack"; }
tgz="$(ls "$BUILD"/packages/kelt-"$VERSION"-*.tar.gz)" || fail "no .tar.gz"
deb="$(ls "$BUILD"/packages/kelt_"$VERSION"_*.deb)" || fail "no .deb"
tgz_files="$(tar -tzf "$tgz")" || fail "tar -tzf $tgz"
for f in bin/kelt lib/libkelt.so lib/libkelt_cxx.so lib/cmake/kelt/kelt-config.cmake \
         lib/pkgconfig/kelt.pc include/kelt.h; do
  grep -q "^kelt-$VERSION-Linux/$f\$" <<<"$tgz_files" || fail "$(basename "$tgz") has no $f"
done
# The tarball unpacked elsewhere runs as it is (relocatable, no environment).
mkdir "$WORK/tgz"
tar -xzf "$tgz" -C "$WORK/tgz" || fail "tar -xzf $tgz"
tgz_version="$(env -i "$WORK/tgz/kelt-$VERSION-Linux/bin/kelt" --version)" \
  || fail "the unpacked tarball's kelt --version"
[[ "$(head -n1 <<<"$tgz_version")" == "kelt $VERSION" ]] || fail "the tarball's kelt: $tgz_version"
depends="$(dpkg-deb -f "$deb" Depends)"
say "   $(basename "$tgz") $(du -h "$tgz" | cut -f1), $(basename "$deb") $(du -h "$deb" | cut -f1)"
say "   Depends: $depends"
for pkg in libc6 libstdc++6 libssl3 libpq5; do
  grep -q "$pkg" <<<"$depends" || fail "the .deb does not depend on $pkg"
done
if [[ "$(dpkg-query -W -f '${db:Status-Status}' kelt 2>/dev/null)" == installed ]]; then
  fail "a kelt package is already installed (dpkg -P kelt first); not replacing it"
fi
[[ "$(id -u)" == 0 ]] || fail "dpkg -i needs root"
trap 'dpkg -P kelt >/dev/null 2>&1 || true; cleanup' EXIT
dpkg -i "$deb" >"$WORK/dpkg.log" 2>&1 || { cat "$WORK/dpkg.log" >&2; fail "dpkg -i"; }
deb_version="$(env -i /usr/bin/kelt --version)" || fail "/usr/bin/kelt --version"
[[ "$(head -n1 <<<"$deb_version")" == "kelt $VERSION" ]] || fail "the .deb's kelt: $deb_version"
say "   dpkg -i: /usr/bin/kelt --version: $(head -n1 <<<"$deb_version")"
dpkg -P kelt >"$WORK/dpkg.log" 2>&1 || { cat "$WORK/dpkg.log" >&2; fail "dpkg -P"; }
[[ ! -e /usr/bin/kelt && ! -e /usr/lib/libkelt.so ]] || fail "dpkg -P left kelt's files"
say "   dpkg -P: removed"
trap cleanup EXIT
say "passed"
