#!/usr/bin/env bash
# Check that each ELF file lists simdjson, libssl and libcrypto before pyarrow's
# libparquet/libarrow in DT_NEEDED: the first library in load order that defines a symbol
# wins, and libparquet exports its own copies of both (cmake/KeltDependencies.cmake).
# A repaired wheel's copies count too: auditwheel renames them libssl-<hash>.so.3 etc.
# Usage: scripts/check_link_order.sh FILE...
set -euo pipefail
status=0
for file in "$@"; do
  [ -n "$file" ] || continue
  mapfile -t needed < <(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  pos() {
    local i
    for i in "${!needed[@]}"; do
      # shellcheck disable=SC2254  # $1 and $2 are patterns
      case "${needed[$i]}" in $1 | $2) echo "$i"; return ;; esac
    done
    echo 9999
  }
  parquet=$(pos 'libparquet.so*' 'libparquet-*.so*')
  arrow=$(pos 'libarrow.so*' 'libarrow-*.so*')
  first_arrow=$((parquet < arrow ? parquet : arrow))
  for lib in 'libsimdjson.so*' 'libssl.so*' 'libcrypto.so*'; do
    at=$(pos "$lib" "${lib%.so\*}-*.so*")
    if [ "$at" -ge "$first_arrow" ]; then
      echo "$file: ${lib%\*} is not before Arrow/Parquet in DT_NEEDED: ${needed[*]}" >&2
      status=1
    fi
  done
  [ "$status" = 0 ] && echo "$file: simdjson, libssl, libcrypto load before Arrow/Parquet"
done
exit "$status"
