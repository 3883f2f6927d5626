#!/usr/bin/env python3
# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Clang's thread-safety analysis over the core's sources (the KELT_GUARDED_BY,
KELT_REQUIRES, ... annotations of src/kelt/common/thread_annotations.h are no-ops under
g++, which builds kelt). Each source of src/kelt/ is compiled with clang++ -fsyntax-only
-Wthread-safety -Werror=thread-safety and the include flags of its entry in the build's
compile_commands.json: the sources that use the annotations (directly or through a
header of their module that does), since the analysis has nothing to check elsewhere.
A probe that writes a guarded member without its lock must fail, so a check that
silently stopped working is caught. Usage: thread_safety_check.py BUILD_DIR [CLANG++]."""
import json
import shlex
import subprocess
import sys
from pathlib import Path


def main() -> int:
    build = Path(sys.argv[1])
    clang = sys.argv[2] if len(sys.argv) > 2 else "clang++"
    entries = json.loads((build / "compile_commands.json").read_text())
    def annotated(path: Path) -> bool:
        texts = [path.read_text()] + [h.read_text() for h in path.parent.glob("*.h")]
        return any("KELT_GUARDED_BY" in t or "KELT_REQUIRES" in t or "MutexLock" in t
                   for t in texts)

    sources = [e for e in entries
               if "/src/kelt/" in e["file"] and not e["file"].endswith("_test.cc")
               and "/testing/" not in e["file"] and annotated(Path(e["file"]))]
    if not sources:
        print("no kelt sources in compile_commands.json", file=sys.stderr)
        return 2
    failed = []
    for e in sources:
        args = e.get("arguments") or shlex.split(e["command"])
        keep = [a for i, a in enumerate(args)
                if a.startswith(("-I", "-isystem", "-D", "-std=")) or
                (i > 0 and args[i - 1] == "-isystem")]
        cmd = [clang, "-fsyntax-only", "-Wno-everything", "-Wthread-safety",
               "-Werror=thread-safety", *keep]
        p = subprocess.run(cmd + [e["file"]], cwd=e["directory"], capture_output=True,
                           text=True)
        if p.returncode != 0:
            failed.append(e["file"])
            sys.stderr.write(p.stderr)
        probe_cmd = cmd
    # The probe: an unlocked write of a guarded member must be an error.
    probe = build / "thread_safety_probe.cc"
    probe.write_text('#include "kelt/common/mutex.h"\n'
                     "struct P { kelt::internal::Mutex mu; int n KELT_GUARDED_BY(mu) = 0;\n"
                     "  void Bad() { n = 1; } };\n")
    p = subprocess.run(probe_cmd + [str(probe)], capture_output=True, text=True)
    if p.returncode == 0 or "requires holding mutex" not in p.stderr:
        print("the probe's unlocked write was not reported:\n" + p.stderr, file=sys.stderr)
        return 1
    print(f"thread-safety analysis: {len(sources) - len(failed)} of {len(sources)} "
          f"sources clean")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
