#!/usr/bin/env bash
# Style checks that machines enforce (STYLE rule 10): clang-format on every C/C++ file
# of the repository (fails on any difference; `--fix` rewrites the files instead).
# clang-tidy runs on demand: `clang-tidy -p build/dev <files>` with the repo's .clang-tidy.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"
cd "$KELT_ROOT"
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cc' '*.h' '*.c')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
clang-format --dry-run -Werror "${files[@]}"
echo "lint: clang-format clean (${#files[@]} files)"
