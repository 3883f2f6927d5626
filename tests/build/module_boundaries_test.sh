#!/usr/bin/env bash
# The module boundaries hold and are documented as they are:
#  1. docs/ARCHITECTURE.md's "May call (kelt modules)" column names, for every module,
#     exactly the modules src/kelt/CMakeLists.txt links it to (module_views/modules.txt);
#  2. a module that includes the public header of a module it may not call does not
#     compile, and the error names that header (each PROBE is TARGET:HEADER).
# Usage: tests/build/module_boundaries_test.sh BUILD_DIR SOURCE_DIR PROBE...
set -euo pipefail
build="$1" src="$2"
shift 2
python3 - "$build/module_views/modules.txt" "$src/docs/ARCHITECTURE.md" <<'PY'
import re, sys
built = {}
for line in open(sys.argv[1]):
    name, _, deps = line.partition(":")
    built[name.strip()] = set(deps.split())
documented = {}
for line in open(sys.argv[2]):
    m = re.match(r"\| `src/kelt/([a-z_]+)/` \|[^|]*\| ([^|]*) \|", line)
    if m and m.group(1) != "testing":
        cell = m.group(2).replace("—", "")
        documented[m.group(1)] = {w.strip() for w in cell.split(",") if w.strip()}
bad = False
for name in sorted(set(built) | set(documented)):
    if built.get(name) != documented.get(name):
        print(f"module {name}: CMake links {sorted(built.get(name, []))}, "
              f"ARCHITECTURE.md says {sorted(documented.get(name, []))}", file=sys.stderr)
        bad = True
if bad:
    sys.exit(1)
print(f"{len(built)} modules: the table matches the build")
PY
for probe in "$@"; do
  target="${probe%%:*}" header="${probe#*:}"
  if out="$(cmake --build "$build" --target "$target" 2>&1)"; then
    echo "$target compiled: the boundary it probes is open" >&2
    exit 1
  fi
  if ! grep -q "$header: No such file or directory" <<<"$out"; then
    echo "$target failed for another reason than $header being out of reach:" >&2
    echo "$out" | tail -20 >&2
    exit 1
  fi
  echo "$target: $header is out of reach, as it should be"
done
