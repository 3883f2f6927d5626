#!/usr/bin/env bash
# The long soak (issue 17, item 5), outside the test command: `kelt run` as a service for
# MINUTES (default 30) at a steady produce rate against a broker of its own, RSS, open
# files and threads sampled every 10 s, flat after the warm-up (RSS growth < 5 %), every
# offset landed once; the samples plotted to docs/soak.png (matplotlib, installed into the
# venv here when missing) and kept in build/soak/soak.json. The test command runs the same
# script for 2 minutes (scripts/test.sh, after the release build).
#
#   bash scripts/soak_test.sh [MINUTES [RATE]]
#
# Uses build/release/cli/kelt (or $KELT_BIN): an ASan build's RSS says nothing.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/paths.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"

MINUTES="${1:-30}"
RATE="${2:-2000}"
WORK="${KELT_SOAK_DIR:-$KELT_ROOT/build/soak}"
KELT_BIN="${KELT_BIN:-$KELT_ROOT/build/release/cli/kelt}"
[[ -x "$KELT_BIN" ]] || { echo "soak: no $KELT_BIN (cmake --build --preset release)" >&2; exit 1; }
"$KELT_VENV/bin/python" -c 'import matplotlib' 2>/dev/null \
  || "$KELT_VENV/bin/python" -m pip install --quiet "matplotlib==3.10.8"

mkdir -p "$WORK"
trap 'bash "$KELT_ROOT/scripts/kafka.sh" stop --dir "$WORK/kafka" >/dev/null 2>&1 || true' EXIT
bash "$KELT_ROOT/scripts/kafka.sh" start --dir "$WORK/kafka" >/dev/null
brokers="$(sed -n 's/^KELT_KAFKA_BOOTSTRAP=//p' "$WORK/kafka/env")"
"$KELT_VENV/bin/python" "$KELT_ROOT/tests/faults/soak.py" --kelt "$KELT_BIN" \
  --brokers "$brokers" --minutes "$MINUTES" --rate "$RATE" \
  --json "$WORK/soak.json" --png "$KELT_ROOT/docs/soak.png"
